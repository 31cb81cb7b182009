//! Alike admissions share one body. A ClusterQueue admits the same few shapes over and over
//! (one podSet of a class's count, the same flavors, the same usage), so it keeps its most
//! recent distinct admissions, and a reservation alike to one of them holds that one's `Arc`
//! rather than a fresh copy of ≈ 200 bytes (BENCHMARKS.md, "…; alike admissions share one
//! body (stop 51)").

use std::sync::Arc;

use smallvec::SmallVec;

use super::Admission;

/// One ClusterQueue's most recently made distinct admissions, most recent first.
#[derive(Debug, Clone, Default)]
pub(super) struct RecentBodies {
    recent: SmallVec<[Arc<Admission>; RecentBodies::KEEP]>,
}

impl RecentBodies {
    /// How many distinct bodies a ClusterQueue keeps.
    const KEEP: usize = 4;

    /// The shared body equal to `a`: a kept one (which becomes the most recent), or `a` itself,
    /// kept in place of the least recent.
    pub(super) fn share(&mut self, a: Admission) -> Arc<Admission> {
        if let Some(i) = self.recent.iter().position(|kept| **kept == a) {
            self.recent[..=i].rotate_right(1);
            return Arc::clone(&self.recent[0]);
        }
        let a = Arc::new(a);
        self.recent.truncate(RecentBodies::KEEP - 1);
        self.recent.insert(0, Arc::clone(&a));
        a
    }
}

#[cfg(test)]
mod tests {
    use smallvec::smallvec;

    use super::*;
    use crate::cluster::{CqId, PodSetAdmission};
    use crate::quota::{FlavorId, FrIdx, ResourceId};

    fn admission(count: i32) -> Admission {
        Admission {
            cluster_queue: CqId(0),
            pod_sets: smallvec![PodSetAdmission {
                name: "main".into(),
                count,
                flavors: smallvec![(ResourceId(0), FlavorId(0))],
                topology: None,
            }],
            usage: smallvec![(FrIdx(0), 1000 * i64::from(count))],
        }
    }

    #[test]
    fn alike_admissions_share_the_kept_body_and_the_least_recent_goes() {
        let mut bodies = RecentBodies::default();
        let first = bodies.share(admission(1));
        let again = bodies.share(admission(1));
        assert!(Arc::ptr_eq(&first, &again), "alike: the same body");
        let other = bodies.share(admission(2));
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(*other, admission(2));
        // Three more distinct bodies: 1 was used before 2, so 1 is the least recent and goes.
        for count in 3..=5 {
            bodies.share(admission(count));
        }
        assert_eq!(bodies.recent.len(), RecentBodies::KEEP);
        assert!(!Arc::ptr_eq(&bodies.share(admission(1)), &first));
        // Using a body makes it the most recent: 3 stays while 4 and 5 go.
        let three = bodies.share(admission(3));
        bodies.share(admission(6));
        bodies.share(admission(7));
        assert!(Arc::ptr_eq(&bodies.share(admission(3)), &three));
    }
}
