//! The admissions the usage log keeps: each distinct one once.
//!
//! The log ([`UsageChange`](super::fairness::UsageChange)) outlives every admission it records:
//! the fairness report, cost attribution and `wasq compare` replay it after the run. Holding
//! the admission each reservation made kept every admission of the run alive (≈ 220 bytes
//! each, 530,000 at ten times Kueue's large scale), and each was memory the kernel had to hand
//! the process fresh while the run went on (BENCHMARKS.md, stop 47). Most are alike: the same
//! ClusterQueue, podSets, counts, flavors and usage, only the reservation time differs. The
//! log keeps one admission per such body, so that the one a workload held is freed with its
//! release and its memory serves the next admission.
//!
//! What the log's readers read of an admission is its body: its ClusterQueue, podSets and
//! usage. Its `reserved_at` is the first alike admission's; a change's own time is its `at`.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use hashbrown::HashTable;

use crate::cluster::Admission;

/// Every distinct admission body the log has recorded.
#[derive(Debug, Default)]
pub(crate) struct LoggedAdmissions {
    table: HashTable<Arc<Admission>>,
}

impl LoggedAdmissions {
    /// The logged admission alike to `a` (`a` itself when none was logged before).
    pub fn intern(&mut self, a: &Arc<Admission>) -> Arc<Admission> {
        let hash = body_hash(a);
        if let Some(found) = self.table.find(hash, |b| same_body(b, a)) {
            return found.clone();
        }
        self.table
            .insert_unique(hash, a.clone(), |b| body_hash(b))
            .get()
            .clone()
    }

    /// How many distinct bodies are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.table.len()
    }
}

/// Everything but the reservation time, by field, so that a field added to [`Admission`]
/// must be placed here on one side or the other.
fn body_hash(a: &Admission) -> u64 {
    let Admission {
        cluster_queue,
        pod_sets,
        usage,
        reserved_at: _,
    } = a;
    let mut h = rustc_hash::FxHasher::default();
    cluster_queue.hash(&mut h);
    pod_sets.hash(&mut h);
    usage.hash(&mut h);
    h.finish()
}

fn same_body(a: &Admission, b: &Admission) -> bool {
    let Admission {
        cluster_queue,
        pod_sets,
        usage,
        reserved_at: _,
    } = a;
    *cluster_queue == b.cluster_queue && *pod_sets == b.pod_sets && *usage == b.usage
}

#[cfg(test)]
mod tests {
    use smallvec::smallvec;

    use super::*;
    use crate::cluster::{CqId, PodSetAdmission};
    use crate::quota::{FlavorId, FrIdx, ResourceId};

    fn admission(cq: u32, count: i32, cpu: i64, at: i64) -> Arc<Admission> {
        Arc::new(Admission {
            cluster_queue: CqId(cq),
            pod_sets: smallvec![PodSetAdmission {
                name: "main".into(),
                count,
                flavors: smallvec![(ResourceId(0), FlavorId(0))],
                topology: None,
            }],
            usage: smallvec![(FrIdx(0), cpu)],
            reserved_at: at,
        })
    }

    #[test]
    fn alike_admissions_are_kept_once_and_differing_ones_apart() {
        let mut logged = LoggedAdmissions::default();
        let first = admission(1, 2, 2000, 10);
        let kept = logged.intern(&first);
        assert!(Arc::ptr_eq(&kept, &first));
        // Only the reservation time differs: the first is kept.
        let later = admission(1, 2, 2000, 99);
        assert!(Arc::ptr_eq(&logged.intern(&later), &first));
        assert_eq!(logged.len(), 1);
        // Another queue, count or usage is another body.
        for other in [
            admission(2, 2, 2000, 10),
            admission(1, 3, 2000, 10),
            admission(1, 2, 3000, 10),
        ] {
            let kept = logged.intern(&other);
            assert!(Arc::ptr_eq(&kept, &other));
            assert_eq!(*kept, *other);
        }
        assert_eq!(logged.len(), 4);
        // A second flavor for the same podSet is another body too.
        let mut flavored = (*first).clone();
        flavored.pod_sets[0].flavors[0].1 = FlavorId(1);
        let flavored = Arc::new(flavored);
        assert!(Arc::ptr_eq(&logged.intern(&flavored), &flavored));
        assert_eq!(logged.len(), 5);
    }
}
