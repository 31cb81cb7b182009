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

#[derive(Debug, Clone)]
pub struct PendingQueue {
    strategy: QueueingStrategy,
    active: BTreeSet<(SortKey, WorkloadId)>,
    inadmissible: rustc_hash::FxHashMap<WorkloadId, SortKey>,
    keys: rustc_hash::FxHashMap<WorkloadId, SortKey>,
    /// A BestEffortFIFO preemptor stays at the head until it is admitted or fails.
    sticky: Option<WorkloadId>,
}

impl PendingQueue {
    pub fn new(strategy: QueueingStrategy) -> PendingQueue {
        PendingQueue {
            strategy,
            active: BTreeSet::new(),
            inadmissible: Default::default(),
            keys: Default::default(),
            sticky: None,
        }
    }

    pub fn strategy(&self) -> QueueingStrategy {
        self.strategy
    }

    pub fn push(&mut self, id: WorkloadId, key: SortKey) {
        self.keys.insert(id, key);
        self.active.insert((key, id));
    }

    pub fn pop(&mut self) -> Option<WorkloadId> {
        if let Some(id) = self.sticky
            && let Some(&key) = self.keys.get(&id)
            && self.active.remove(&(key, id))
        {
            self.keys.remove(&id);
            return Some(id);
        }
        let (_, id) = self.active.pop_first()?;
        self.keys.remove(&id);
        Some(id)
    }

    /// Kueue's `RequeueIfNotPresent`: StrictFIFO keeps the head blocking unless the namespace
    /// does not match; BestEffortFIFO parks it unless it failed only after nomination or is
    /// waiting for preemptions.
    pub fn requeue(&mut self, id: WorkloadId, key: SortKey, reason: RequeueReason) {
        let immediate = match self.strategy {
            QueueingStrategy::StrictFIFO => reason != RequeueReason::NamespaceMismatch,
            QueueingStrategy::BestEffortFIFO => matches!(
                reason,
                RequeueReason::FailedAfterNomination | RequeueReason::PendingPreemption
            ),
        };
        if reason == RequeueReason::PendingPreemption {
            if self.strategy == QueueingStrategy::BestEffortFIFO {
                self.sticky = Some(id);
            }
        } else if self.sticky == Some(id) {
            self.sticky = None;
        }
        if immediate {
            self.push(id, key);
        } else {
            self.inadmissible.insert(id, key);
        }
    }

    pub fn activate_all(&mut self) {
        // Drained, not dropped: the set keeps its capacity for the next parked heads.
        let mut parked = std::mem::take(&mut self.inadmissible);
        for (id, key) in parked.drain() {
            self.push(id, key);
        }
        self.inadmissible = parked;
    }

    pub fn remove(&mut self, id: WorkloadId) -> bool {
        if self.sticky == Some(id) {
            self.sticky = None;
        }
        if let Some(key) = self.keys.remove(&id) {
            return self.active.remove(&(key, id));
        }
        self.inadmissible.remove(&id).is_some()
    }

    pub fn is_inadmissible(&self, id: WorkloadId) -> bool {
        self.inadmissible.contains_key(&id)
    }

    /// Gives a pending workload a new key, active or parked as it was (admission fair sharing:
    /// its LocalQueue's usage changed). Returns whether it was pending here.
    pub fn rekey(&mut self, id: WorkloadId, key: SortKey) -> bool {
        if let Some(parked) = self.inadmissible.get_mut(&id) {
            *parked = key;
            return true;
        }
        match self.keys.get_mut(&id) {
            Some(old) => {
                self.active.remove(&(*old, id));
                *old = key;
                self.active.insert((key, id));
                true
            }
            None => false,
        }
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
            self.inadmissible.iter().map(|(&id, &k)| (k, id)).collect();
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
        q.requeue(head, key(5, 0), RequeueReason::NoFit);
        assert_eq!(q.pop(), Some(WorkloadId(1)));
        q.requeue(WorkloadId(1), key(5, 0), RequeueReason::NamespaceMismatch);
        assert!(q.is_inadmissible(WorkloadId(1)));
        assert_eq!(q.pop(), Some(WorkloadId(2)));
    }

    #[test]
    fn best_effort_parks_until_capacity_changes() {
        let mut q = PendingQueue::new(QueueingStrategy::BestEffortFIFO);
        q.push(WorkloadId(1), key(5, 0));
        q.push(WorkloadId(2), key(1, 0));
        let head = q.pop().unwrap();
        q.requeue(head, key(5, 0), RequeueReason::NoFit);
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
        q.requeue(head, key(1, 0), RequeueReason::PendingPreemption);
        q.push(WorkloadId(0), key(9, 0));
        assert_eq!(q.pop(), Some(WorkloadId(1)));
    }
}
