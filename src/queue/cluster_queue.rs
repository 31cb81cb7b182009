//! One ClusterQueue's pending workloads: an ordered active set and a parked inadmissible set.

use std::collections::BTreeSet;

use crate::api::QueueingStrategy;
use crate::cluster::WorkloadId;

/// The ordering policy's key: compared lexicographically, smallest first. Kueue's built-in key
/// is `[-effective priority, creation time, 0]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SortKey(pub [i64; 3]);

/// Why a popped head goes back to its queue (Kueue's `RequeueReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequeueReason {
    /// Did not fit (flavor assignment found nothing).
    NoFit,
    /// Needed preemption but no victims could be found.
    PreemptionNoCandidates,
    /// Nominated, but another workload of the same cycle took the capacity.
    FailedAfterNomination,
    /// Waiting for its victims to be evicted.
    PendingPreemption,
    /// The namespace does not match the ClusterQueue's namespaceSelector.
    NamespaceMismatch,
    /// Anything else (inactive ClusterQueue, ...).
    Generic,
}

/// One ClusterQueue's pending workloads. It does not remember the key of an active workload:
/// whoever takes one out by id ([`PendingQueue::remove`], [`PendingQueue::rekey`]) says the
/// key it was pushed with ([`QueueManager`](super::QueueManager) keeps them, one slot per
/// workload, so that no step of a cycle hashes into a per-queue map).
#[derive(Debug, Clone)]
pub struct PendingQueue {
    strategy: QueueingStrategy,
    active: BTreeSet<(SortKey, WorkloadId)>,
    /// Parked workloads with their keys, in no order. A list rather than a map: parking is a
    /// push and activating a drain, where a hash table per ClusterQueue missed the cache on
    /// most parked heads at ten times Kueue's scale. Whoever takes one out says where it sits
    /// ([`PendingQueue::requeue`] tells; [`QueueManager`](super::QueueManager) keeps it).
    inadmissible: Vec<(WorkloadId, SortKey)>,
    /// A BestEffortFIFO preemptor stays at the head until it is admitted or fails; with the key
    /// it is queued under.
    sticky: Option<(WorkloadId, SortKey)>,
}

impl PendingQueue {
    pub fn new(strategy: QueueingStrategy) -> PendingQueue {
        PendingQueue {
            strategy,
            active: BTreeSet::new(),
            inadmissible: Default::default(),
            sticky: None,
        }
    }

    pub fn strategy(&self) -> QueueingStrategy {
        self.strategy
    }

    pub fn push(&mut self, id: WorkloadId, key: SortKey) {
        self.active.insert((key, id));
    }

    pub fn pop(&mut self) -> Option<WorkloadId> {
        if let Some((id, key)) = self.sticky
            && self.active.remove(&(key, id))
        {
            return Some(id);
        }
        let (_, id) = self.active.pop_first()?;
        Some(id)
    }

    /// Kueue's `RequeueIfNotPresent`: StrictFIFO keeps the head blocking unless the namespace
    /// does not match; BestEffortFIFO parks it unless it failed only after nomination or is
    /// waiting for preemptions.
    /// Returns where the workload was parked (`None`: made active again).
    pub fn requeue(
        &mut self,
        id: WorkloadId,
        key: SortKey,
        reason: RequeueReason,
    ) -> Option<usize> {
        let immediate = match self.strategy {
            QueueingStrategy::StrictFIFO => reason != RequeueReason::NamespaceMismatch,
            QueueingStrategy::BestEffortFIFO => matches!(
                reason,
                RequeueReason::FailedAfterNomination | RequeueReason::PendingPreemption
            ),
        };
        if reason == RequeueReason::PendingPreemption {
            if self.strategy == QueueingStrategy::BestEffortFIFO {
                self.sticky = Some((id, key));
            }
        } else if self.is_sticky(id) {
            self.sticky = None;
        }
        if immediate {
            self.push(id, key);
            return None;
        }
        self.inadmissible.push((id, key));
        Some(self.inadmissible.len() - 1)
    }

    pub fn activate_all(&mut self) {
        self.activate_all_with(|_| {});
    }

    /// [`activate_all`](PendingQueue::activate_all), telling `activated` each workload moved.
    pub fn activate_all_with(&mut self, mut activated: impl FnMut(WorkloadId)) {
        // Drained, not dropped: the set keeps its capacity for the next parked heads.
        let mut parked = std::mem::take(&mut self.inadmissible);
        for (id, key) in parked.drain(..) {
            self.push(id, key);
            activated(id);
        }
        self.inadmissible = parked;
    }

    fn is_sticky(&self, id: WorkloadId) -> bool {
        self.sticky.is_some_and(|(s, _)| s == id)
    }

    /// Takes out an active workload queued under `key`. Returns whether it was here.
    pub fn remove(&mut self, id: WorkloadId, key: SortKey) -> bool {
        if self.is_sticky(id) {
            self.sticky = None;
        }
        self.active.remove(&(key, id))
    }

    /// Takes out the parked workload at `at` (where [`PendingQueue::requeue`] parked it, or
    /// where a later removal moved it). Returns it, and the workload moved into `at` in its
    /// place, if any (its place is now `at`).
    pub fn remove_parked(&mut self, at: usize) -> (WorkloadId, Option<WorkloadId>) {
        let (id, _) = self.inadmissible.swap_remove(at);
        (id, self.inadmissible.get(at).map(|&(moved, _)| moved))
    }

    /// Whether the workload is parked here: a scan of the parked list, for one-off reads
    /// ([`QueueManager::is_inadmissible`](super::QueueManager::is_inadmissible) answers from
    /// its table).
    pub fn is_inadmissible(&self, id: WorkloadId) -> bool {
        self.inadmissible.iter().any(|&(p, _)| p == id)
    }

    /// Gives the parked workload at `at` a new key (it stays parked).
    pub fn rekey_parked(&mut self, at: usize, key: SortKey) {
        self.inadmissible[at].1 = key;
    }

    /// Gives an active workload a new key (admission fair sharing: its LocalQueue's usage
    /// changed). Returns whether it was active here under `old`.
    pub fn rekey(&mut self, id: WorkloadId, old: SortKey, key: SortKey) -> bool {
        if !self.active.remove(&(old, id)) {
            return false;
        }
        self.active.insert((key, id));
        if let Some((s, k)) = &mut self.sticky
            && *s == id
        {
            *k = key;
        }
        true
    }

    pub fn active_len(&self) -> usize {
        self.active.len()
    }

    pub fn inadmissible_len(&self) -> usize {
        self.inadmissible.len()
    }

    /// All pending workloads in queue order (active then parked, each by key), for visibility.
    pub fn ordered(&self) -> Vec<WorkloadId> {
        let mut parked: Vec<(SortKey, WorkloadId)> =
            self.inadmissible.iter().map(|&(id, k)| (k, id)).collect();
        parked.sort();
        self.active
            .iter()
            .chain(parked.iter())
            .map(|&(_, id)| id)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: i64, t: i64) -> SortKey {
        SortKey([-p, t, 0])
    }

    #[test]
    fn pops_by_key_then_id() {
        let mut q = PendingQueue::new(QueueingStrategy::BestEffortFIFO);
        q.push(WorkloadId(3), key(1, 5));
        q.push(WorkloadId(1), key(2, 9));
        q.push(WorkloadId(2), key(1, 5));
        assert_eq!(q.pop(), Some(WorkloadId(1)));
        assert_eq!(q.pop(), Some(WorkloadId(2)));
        assert_eq!(q.pop(), Some(WorkloadId(3)));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn strict_fifo_head_keeps_blocking() {
        let mut q = PendingQueue::new(QueueingStrategy::StrictFIFO);
        q.push(WorkloadId(1), key(5, 0));
        q.push(WorkloadId(2), key(1, 0));
        let head = q.pop().unwrap();
        assert!(q.requeue(head, key(5, 0), RequeueReason::NoFit).is_none());
        assert_eq!(q.pop(), Some(WorkloadId(1)));
        assert_eq!(
            q.requeue(WorkloadId(1), key(5, 0), RequeueReason::NamespaceMismatch),
            Some(0)
        );
        assert!(q.is_inadmissible(WorkloadId(1)));
        assert_eq!(q.pop(), Some(WorkloadId(2)));
    }

    #[test]
    fn best_effort_parks_until_capacity_changes() {
        let mut q = PendingQueue::new(QueueingStrategy::BestEffortFIFO);
        q.push(WorkloadId(1), key(5, 0));
        q.push(WorkloadId(2), key(1, 0));
        let head = q.pop().unwrap();
        assert_eq!(q.requeue(head, key(5, 0), RequeueReason::NoFit), Some(0));
        assert!(q.is_inadmissible(WorkloadId(1)));
        assert_eq!(q.pop(), Some(WorkloadId(2)));
        q.activate_all();
        assert_eq!(q.pop(), Some(WorkloadId(1)));
    }

    #[test]
    fn best_effort_preemptor_is_sticky() {
        let mut q = PendingQueue::new(QueueingStrategy::BestEffortFIFO);
        q.push(WorkloadId(1), key(1, 0));
        q.push(WorkloadId(2), key(1, 1));
        let head = q.pop().unwrap();
        assert!(
            q.requeue(head, key(1, 0), RequeueReason::PendingPreemption)
                .is_none()
        );
        q.push(WorkloadId(0), key(9, 0));
        assert_eq!(q.pop(), Some(WorkloadId(1)));
    }
}
