//! Typed accessors of [`Workload`]: what the record says about the workload's history and
//! what it requests.

use crate::types::{PodSet, RequeueReason, Workload};

impl Workload {
    /// Its podSets, in the Workload's order: empty when the host sent none (an ordering or
    /// preemption plugin whose `needs` lack `Needs::POD_SETS`). Flavor-assignment and
    /// placement requests always carry them.
    pub fn pod_sets(&self) -> &[PodSet] {
        self.pod_sets.as_deref().unwrap_or_default()
    }

    /// How often the workload was evicted and queued again: preempted, sent back by an
    /// admission check in `Retry`, or evicted by the PodsReady timeout (0 = never).
    pub fn requeue_count(&self) -> u32 {
        self.requeue_count
    }

    /// Why it was last evicted and queued again; `None` when it never was.
    pub fn requeue_reason(&self) -> Option<RequeueReason> {
        self.requeue_reason
    }

    /// Whether it was evicted and queued again at least `times` times (`times` = 0: always):
    /// the test an ordering policy uses to demote workloads that keep failing.
    pub fn requeued_at_least(&self, times: u32) -> bool {
        self.requeue_count >= times
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{requeued, workload};

    #[test]
    fn accessors_read_the_record() {
        let fresh = workload(1, 0, 5, 100);
        assert_eq!((fresh.requeue_count(), fresh.requeue_reason()), (0, None));
        assert!(fresh.requeued_at_least(0) && !fresh.requeued_at_least(1));
        let flapping = requeued(workload(2, 0, 5, 100), 3, RequeueReason::PodsReadyTimeout);
        assert_eq!(
            (flapping.requeue_count(), flapping.requeue_reason()),
            (3, Some(RequeueReason::PodsReadyTimeout))
        );
        assert!(flapping.requeued_at_least(3) && !flapping.requeued_at_least(4));
    }
}
