//! Pending workloads: one queue per ClusterQueue, ordered by the ordering policy's sort key,
//! with Kueue's StrictFIFO / BestEffortFIFO requeue rules and inadmissible parking.
//!
//! Invariants: a workload is in at most one place (active heap or inadmissible set) of at most
//! one ClusterQueue; the heap order is total (sort key, then the workload id as a stable
//! tie-break); a BestEffortFIFO preemptor waiting for its victims is sticky at the head.

mod cluster_queue;

pub use cluster_queue::{PendingQueue, RequeueReason, SortKey};

use crate::api::QueueingStrategy;
use crate::cluster::{CqId, WorkloadId};

/// Every ClusterQueue's pending queue, plus where each pending workload is.
#[derive(Debug, Clone, Default)]
pub struct QueueManager {
    queues: Vec<PendingQueue>,
    location: rustc_hash::FxHashMap<WorkloadId, CqId>,
    /// The queues holding parked (inadmissible) workloads.
    parked: std::collections::BTreeSet<CqId>,
}

impl QueueManager {
    pub fn new(strategies: impl IntoIterator<Item = QueueingStrategy>) -> QueueManager {
        QueueManager {
            queues: strategies.into_iter().map(PendingQueue::new).collect(),
            location: Default::default(),
            parked: Default::default(),
        }
    }

    pub fn queue(&self, cq: CqId) -> &PendingQueue {
        &self.queues[cq.index()]
    }

    /// Adds a newly submitted (or evicted) workload as active.
    pub fn push(&mut self, cq: CqId, id: WorkloadId, key: SortKey) {
        self.remove(id);
        self.queues[cq.index()].push(id, key);
        self.location.insert(id, cq);
    }

    /// Pops the head of every ClusterQueue whose id `is_active` accepts: at most one per queue.
    pub fn heads(&mut self, is_active: impl Fn(CqId) -> bool) -> Vec<(CqId, WorkloadId)> {
        let mut heads = Vec::new();
        self.heads_into(&mut heads, is_active);
        heads
    }

    /// [`QueueManager::heads`] into a buffer (cleared first), for a caller that reuses it.
    pub fn heads_into(
        &mut self,
        heads: &mut Vec<(CqId, WorkloadId)>,
        is_active: impl Fn(CqId) -> bool,
    ) {
        heads.clear();
        for (i, q) in self.queues.iter_mut().enumerate() {
            let cq = CqId(i as u32);
            if !is_active(cq) {
                continue;
            }
            if let Some(id) = q.pop() {
                self.location.remove(&id);
                heads.push((cq, id));
            }
        }
    }

    /// Puts a popped head back according to the queue's strategy and the reason.
    pub fn requeue(&mut self, cq: CqId, id: WorkloadId, key: SortKey, reason: RequeueReason) {
        self.remove(id);
        self.queues[cq.index()].requeue(id, key, reason);
        if self.queues[cq.index()].is_inadmissible(id) {
            self.parked.insert(cq);
        }
        self.location.insert(id, cq);
    }

    /// Moves every parked workload of these queues back to their active heaps (capacity changed).
    pub fn requeue_inadmissible(&mut self, cqs: impl IntoIterator<Item = CqId>) {
        for cq in cqs {
            self.queues[cq.index()].activate_all();
            self.parked.remove(&cq);
        }
    }

    /// The queues that hold parked workloads, in id order.
    pub fn with_parked(&self) -> impl Iterator<Item = CqId> + '_ {
        self.parked.iter().copied()
    }

    /// Removes a workload wherever it is pending. Returns whether it was.
    pub fn remove(&mut self, id: WorkloadId) -> bool {
        match self.location.remove(&id) {
            Some(cq) => {
                let q = &mut self.queues[cq.index()];
                let was = q.remove(id);
                if q.inadmissible_len() == 0 {
                    self.parked.remove(&cq);
                }
                was
            }
            None => false,
        }
    }

    /// Gives a pending workload a new key where it is (see [`PendingQueue::rekey`]).
    pub fn rekey(&mut self, id: WorkloadId, key: SortKey) -> bool {
        match self.location.get(&id) {
            Some(cq) => self.queues[cq.index()].rekey(id, key),
            None => false,
        }
    }

    pub fn contains(&self, id: WorkloadId) -> bool {
        self.location.contains_key(&id)
    }

    pub fn is_inadmissible(&self, id: WorkloadId) -> bool {
        self.location
            .get(&id)
            .is_some_and(|cq| self.queues[cq.index()].is_inadmissible(id))
    }

    pub fn pending_total(&self) -> usize {
        self.location.len()
    }

    /// Whether any queue has an active (not parked) workload.
    pub fn has_active(&self) -> bool {
        self.queues.iter().any(|q| q.active_len() > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::RequeueReason;

    /// `with_parked` lists exactly the queues holding parked workloads: parking adds a queue;
    /// activating it or removing its last parked workload takes it out.
    #[test]
    fn lists_the_queues_with_parked_workloads() {
        let mut m = QueueManager::new([QueueingStrategy::BestEffortFIFO; 3]);
        let key = SortKey([0, 0, 0]);
        for (cq, wl) in [(0, 1), (1, 2), (1, 3), (2, 4)] {
            m.push(CqId(cq), WorkloadId(wl), key);
        }
        let heads = m.heads(|_| true);
        assert_eq!(heads.len(), 3);
        for (cq, wl) in heads {
            let reason = if cq == CqId(2) {
                RequeueReason::FailedAfterNomination
            } else {
                RequeueReason::NoFit
            };
            m.requeue(cq, wl, key, reason);
        }
        assert_eq!(m.with_parked().collect::<Vec<_>>(), [CqId(0), CqId(1)]);
        m.remove(WorkloadId(1));
        assert_eq!(m.with_parked().collect::<Vec<_>>(), [CqId(1)]);
        m.requeue_inadmissible([CqId(1)]);
        assert_eq!(m.with_parked().count(), 0);
        assert!(m.queue(CqId(1)).active_len() == 2 && m.contains(WorkloadId(2)));
    }
}
