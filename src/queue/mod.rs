//! Pending workloads: one queue per ClusterQueue, ordered by the ordering policy's sort key,
//! with Kueue's StrictFIFO / BestEffortFIFO requeue rules and inadmissible parking.
//!
//! Invariants: a workload is in at most one place (active set or inadmissible list) of at most
//! one ClusterQueue; the active order is total (sort key, then the workload id as a stable
//! tie-break); a BestEffortFIFO preemptor waiting for its victims is sticky at the head.

mod cluster_queue;
mod cq_bits;

pub use cluster_queue::{PendingQueue, RequeueReason, SortKey};

use crate::api::QueueingStrategy;
use crate::cluster::{CqId, WorkloadId};

/// A ClusterQueue's head, popped for a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub cq: CqId,
    pub workload: WorkloadId,
    /// The key it was queued under: the cycle orders by it and puts the head back under it.
    pub key: SortKey,
}

/// Every ClusterQueue's pending queue, plus where each pending workload is.
#[derive(Debug, Clone, Default)]
pub struct QueueManager {
    queues: Vec<PendingQueue>,
    /// Per workload id: the queue it is pending in and the key it is queued under. A dense
    /// table rather than a map, so that each head of a cycle costs an indexed read, not a hash
    /// probe into a table of every pending workload (at 500,000 workloads those were cache
    /// misses on every pop, requeue and parked check).
    slots: Vec<Slot>,
    /// How many workloads are pending.
    pending: usize,
    /// The queues holding parked (inadmissible) workloads.
    parked: cq_bits::CqBits,
}

/// Where a workload is pending, if it is.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The ClusterQueue's index, or [`Slot::NONE`] when the workload is not pending.
    cq: u32,
    /// Where it was last parked in the queue's parked list, or [`Slot::NONE`] when it was last
    /// placed active (pushed, or put back at once). It is parked only if the list holds it there
    /// ([`QueueManager::parked_at`]): activating a queue's parked workloads drains the list and
    /// leaves their slots as they were, since at ten times Kueue's large scale writing each
    /// one's slot was a miss per activated workload (BENCHMARKS.md, stop 51). A workload is
    /// parked again only through [`QueueManager::requeue`], which writes its slot, so a stale
    /// place never finds its own workload.
    parked_at: u32,
    key: SortKey,
}

impl Slot {
    const NONE: u32 = u32::MAX;
    const EMPTY: Slot = Slot {
        cq: Slot::NONE,
        parked_at: Slot::NONE,
        key: SortKey([0; 3]),
    };

    fn cq(&self) -> Option<CqId> {
        (self.cq != Slot::NONE).then_some(CqId(self.cq))
    }

    /// Where it was last parked (see [`Slot::parked_at`]'s field).
    fn last_parked_at(&self) -> Option<usize> {
        (self.parked_at != Slot::NONE).then_some(self.parked_at as usize)
    }
}

impl QueueManager {
    /// How many queues (or heads) ahead [`QueueManager::heads_into`] asks for the lines it
    /// will read.
    const AHEAD: usize = 8;

    /// Bytes held per workload id (for memory accounting).
    pub const BYTES_PER_ID: usize = std::mem::size_of::<Slot>();

    pub fn new(strategies: impl IntoIterator<Item = QueueingStrategy>) -> QueueManager {
        QueueManager {
            queues: strategies.into_iter().map(PendingQueue::new).collect(),
            slots: Vec::new(),
            pending: 0,
            parked: Default::default(),
        }
    }

    /// Room for workload ids below `n` in the table of slots without growing it again: a table
    /// grown by doubling as workloads arrive copies itself each time and briefly holds both
    /// copies. Nothing is written, so pages are touched only as workloads are queued.
    pub fn reserve_ids(&mut self, n: usize) {
        self.slots.reserve(n.saturating_sub(self.slots.len()));
    }

    fn slot(&self, id: WorkloadId) -> Slot {
        self.slots.get(id.index()).copied().unwrap_or(Slot::EMPTY)
    }

    /// Records that `id` is pending in `cq` under `key`, active or parked at `parked_at`.
    fn place(&mut self, id: WorkloadId, cq: CqId, key: SortKey, parked_at: Option<usize>) {
        let i = id.index();
        if i >= self.slots.len() {
            self.slots.resize(i + 1, Slot::EMPTY);
        }
        let slot = &mut self.slots[i];
        if slot.cq == Slot::NONE {
            self.pending += 1;
        }
        *slot = Slot {
            cq: cq.0,
            parked_at: parked_at.map_or(Slot::NONE, |at| {
                u32::try_from(at).expect("fewer than 2^32 parked workloads")
            }),
            key,
        };
    }

    /// Records that `id` is no longer pending; returns where it was.
    fn vacate(&mut self, id: WorkloadId) -> Option<Slot> {
        let slot = self.slots.get_mut(id.index())?;
        if slot.cq == Slot::NONE {
            return None;
        }
        let was = *slot;
        slot.cq = Slot::NONE;
        self.pending -= 1;
        Some(was)
    }

    pub fn queue(&self, cq: CqId) -> &PendingQueue {
        &self.queues[cq.index()]
    }

    /// Adds a newly submitted (or evicted) workload as active.
    pub fn push(&mut self, cq: CqId, id: WorkloadId, key: SortKey) {
        self.remove(id);
        self.queues[cq.index()].push(id, key);
        self.place(id, cq, key, None);
    }

    /// Pops the head of every ClusterQueue whose id `is_active` accepts: at most one per queue.
    pub fn heads(&mut self, is_active: impl Fn(CqId) -> bool) -> Vec<(CqId, WorkloadId)> {
        let mut heads = Vec::new();
        self.heads_into(&mut heads, is_active);
        heads.iter().map(|h| (h.cq, h.workload)).collect()
    }

    /// [`QueueManager::heads`] into a buffer (cleared first), for a caller that reuses it, each
    /// with the key it was queued under.
    pub fn heads_into(&mut self, heads: &mut Vec<Head>, is_active: impl Fn(CqId) -> bool) {
        heads.clear();
        // Each queue's head and each head's slot are asked for a few ahead of their reads: at
        // ten times Kueue's large scale neither is in the cache, and waiting for each in turn
        // was a wait on memory per ClusterQueue and cycle.
        for i in 0..self.queues.len() {
            if let Some(ahead) = self.queues.get(i + Self::AHEAD) {
                ahead.prefetch_head();
            }
            let q = &mut self.queues[i];
            let cq = CqId(i as u32);
            if !is_active(cq) {
                continue;
            }
            if let Some((workload, key)) = q.pop_keyed() {
                heads.push(Head { cq, workload, key });
            }
        }
        for (i, h) in heads.iter().enumerate() {
            if let Some(ahead) = heads.get(i + Self::AHEAD) {
                self.prefetch(ahead.workload);
            }
            self.vacate(h.workload);
        }
    }

    /// Asks for the cache line of `id`'s slot (a hint, see [`wasq_alloc::prefetch`]).
    pub fn prefetch(&self, id: WorkloadId) {
        if let Some(slot) = self.slots.get(id.index()) {
            wasq_alloc::prefetch(slot, 1);
        }
    }

    /// Puts a popped head back according to the queue's strategy and the reason.
    pub fn requeue(&mut self, cq: CqId, id: WorkloadId, key: SortKey, reason: RequeueReason) {
        self.remove(id);
        let parked_at = self.queues[cq.index()].requeue(id, key, reason);
        if parked_at.is_some() {
            self.parked.insert(cq);
        }
        self.place(id, cq, key, parked_at);
    }

    /// Moves every parked workload of these queues back to their active sets (capacity
    /// changed). Their slots are left as they were ([`Slot::parked_at`]).
    pub fn requeue_inadmissible<I>(&mut self, cqs: I)
    where
        I: IntoIterator<Item = CqId>,
        I::IntoIter: Clone,
    {
        // The parked list and active run of the queue a few ahead are asked for now: at ten
        // times Kueue's large scale a cohort's queues are activated together whenever quota
        // frees, and each one's lists were a wait on memory (BENCHMARKS.md, stop 54).
        let cqs = cqs.into_iter();
        let mut ahead = cqs.clone().skip(Self::AHEAD / 2);
        for cq in cqs {
            if let Some(next) = ahead.next() {
                self.queues[next.index()].prefetch_parked();
            }
            self.queues[cq.index()].activate_all();
            self.parked.remove(cq);
        }
    }

    /// Where a pending workload with this slot is parked: where it was last parked, if its
    /// queue's parked list still holds it there.
    fn parked_at(&self, id: WorkloadId, slot: &Slot) -> Option<usize> {
        let cq = slot.cq()?;
        slot.last_parked_at()
            .filter(|&at| self.queues[cq.index()].parked_id(at) == Some(id))
    }

    /// The queues that hold parked workloads, in id order.
    pub fn with_parked(&self) -> impl Iterator<Item = CqId> + '_ {
        self.parked.iter()
    }

    /// Removes a workload wherever it is pending. Returns whether it was.
    pub fn remove(&mut self, id: WorkloadId) -> bool {
        match self.vacate(id) {
            Some(slot) => {
                let cq = slot.cq().expect("a vacated slot names its queue");
                let parked_at = self.parked_at(id, &slot);
                let q = &mut self.queues[cq.index()];
                let was = match parked_at {
                    Some(at) => {
                        let (removed, moved) = q.remove_parked(at);
                        debug_assert_eq!(removed, id, "the slot says where it is parked");
                        if let Some(moved) = moved {
                            self.slots[moved.index()].parked_at = at as u32;
                        }
                        true
                    }
                    None => q.remove(id, slot.key),
                };
                if q.inadmissible_len() == 0 {
                    self.parked.remove(cq);
                }
                was
            }
            None => false,
        }
    }

    /// Gives a pending workload a new key where it is (see [`PendingQueue::rekey`]).
    pub fn rekey(&mut self, id: WorkloadId, key: SortKey) -> bool {
        let slot = self.slot(id);
        let Some(cq) = slot.cq() else {
            return false;
        };
        let done = match self.parked_at(id, &slot) {
            Some(at) => {
                self.queues[cq.index()].rekey_parked(at, key);
                true
            }
            None => self.queues[cq.index()].rekey(id, slot.key, key),
        };
        if done {
            self.slots[id.index()].key = key;
        }
        done
    }

    pub fn contains(&self, id: WorkloadId) -> bool {
        self.slot(id).cq().is_some()
    }

    pub fn is_inadmissible(&self, id: WorkloadId) -> bool {
        self.parked_at(id, &self.slot(id)).is_some()
    }

    pub fn pending_total(&self) -> usize {
        self.pending
    }

    /// Bytes the queues hold on the heap for their workloads (see [`PendingQueue::heap_bytes`]).
    pub fn queues_heap_bytes(&self) -> usize {
        self.queues.iter().map(PendingQueue::heap_bytes).sum()
    }

    /// Whether any queue has an active (not parked) workload.
    pub fn has_active(&self) -> bool {
        self.queues.iter().any(PendingQueue::has_active)
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

    /// A cycle's heads come with the key each was queued under, the sticky preemptor's too.
    #[test]
    fn heads_carry_their_keys() {
        let mut m = QueueManager::new([QueueingStrategy::BestEffortFIFO; 2]);
        let (a, b, c) = (WorkloadId(0), WorkloadId(1), WorkloadId(2));
        m.push(CqId(0), a, SortKey([4, 0, 0]));
        m.push(CqId(0), b, SortKey([9, 0, 0]));
        m.push(CqId(1), c, SortKey([2, 5, 0]));
        let mut heads = Vec::new();
        m.heads_into(&mut heads, |_| true);
        let keyed = |h: &[Head]| h.iter().map(|h| (h.workload, h.key)).collect::<Vec<_>>();
        assert_eq!(
            keyed(&heads),
            [(a, SortKey([4, 0, 0])), (c, SortKey([2, 5, 0]))]
        );
        // A preemptor waiting for its victims stays at the head, under its key, even with a
        // lower key queued behind it.
        m.requeue(
            CqId(0),
            a,
            SortKey([4, 0, 0]),
            RequeueReason::PendingPreemption,
        );
        m.push(CqId(0), WorkloadId(3), SortKey([1, 0, 0]));
        m.heads_into(&mut heads, |cq| cq == CqId(0));
        assert_eq!(keyed(&heads), [(a, SortKey([4, 0, 0]))]);
    }

    /// The manager's slot per workload follows it through every move: rekeyed while active or
    /// parked, parked and activated, popped, removed; a rekeyed sticky preemptor stays at its
    /// queue's head.
    #[test]
    fn slots_follow_each_workload() {
        let mut m = QueueManager::new([QueueingStrategy::BestEffortFIFO; 2]);
        let (a, b, c) = (WorkloadId(0), WorkloadId(7), WorkloadId(3));
        m.push(CqId(0), a, SortKey([1, 0, 0]));
        m.push(CqId(0), b, SortKey([2, 0, 0]));
        m.push(CqId(1), c, SortKey([0, 0, 0]));
        assert_eq!(m.pending_total(), 3);
        assert!(m.rekey(b, SortKey([0, 0, 0])));
        assert!(!m.rekey(WorkloadId(40), SortKey([0, 0, 0])));
        assert_eq!(m.heads(|cq| cq == CqId(0)), [(CqId(0), b)]);
        assert!(!m.contains(b) && m.pending_total() == 2);
        m.requeue(CqId(0), b, SortKey([0, 0, 0]), RequeueReason::NoFit);
        assert!(m.is_inadmissible(b) && !m.is_inadmissible(a) && m.pending_total() == 3);
        // Rekeyed while parked: it comes back under the new key.
        assert!(m.rekey(b, SortKey([5, 0, 0])));
        m.requeue_inadmissible([CqId(0)]);
        assert!(!m.is_inadmissible(b) && m.contains(b));
        assert_eq!(m.queue(CqId(0)).ordered(), [a, b]);
        // Removed from the active set under its latest key.
        assert!(m.remove(b) && !m.remove(b) && !m.contains(b));
        assert_eq!(m.pending_total(), 2);
        assert_eq!(m.heads(|_| true), [(CqId(0), a), (CqId(1), c)]);
        // A preemptor waiting for its victims stays at the head, rekeyed or not.
        m.requeue(
            CqId(0),
            a,
            SortKey([1, 0, 0]),
            RequeueReason::PendingPreemption,
        );
        m.push(CqId(0), b, SortKey([0, 0, 0]));
        assert!(m.rekey(a, SortKey([9, 0, 0])));
        assert_eq!(m.heads(|cq| cq == CqId(0)), [(CqId(0), a)]);
        assert_eq!(m.pending_total(), 1);
    }

    /// Activation leaves each workload's last parked place in its slot. A stale place never
    /// finds its workload, whether the list is empty or another workload is parked there
    /// (parking it again writes its slot), so the parked check, rekeys and removals treat it
    /// as active.
    #[test]
    fn stale_parked_places_never_find_their_workload() {
        let mut m = QueueManager::new([QueueingStrategy::BestEffortFIFO; 1]);
        let (a, b, c) = (WorkloadId(0), WorkloadId(1), WorkloadId(2));
        let key = |k: i64| SortKey([k, 0, 0]);
        for (id, k) in [(a, 0), (b, 1), (c, 2)] {
            m.push(CqId(0), id, key(k));
        }
        // a parked at 0, then activated with the list drained: a stale 0 in a's slot.
        assert_eq!(m.heads(|_| true), [(CqId(0), a)]);
        m.requeue(CqId(0), a, key(0), RequeueReason::NoFit);
        assert!(m.is_inadmissible(a));
        m.requeue_inadmissible([CqId(0)]);
        assert!(!m.is_inadmissible(a) && m.contains(a));
        // Rekeyed as active (the list is empty): b becomes the head, and is parked at 0.
        assert!(m.rekey(a, key(9)));
        assert_eq!(m.heads(|_| true), [(CqId(0), b)]);
        m.requeue(CqId(0), b, key(1), RequeueReason::NoFit);
        // a's stale 0 now names b: a is active, b parked.
        assert!(!m.is_inadmissible(a) && m.is_inadmissible(b));
        assert!(m.rekey(a, key(8)));
        assert_eq!(m.queue(CqId(0)).ordered(), [c, a, b]);
        assert!(m.remove(a) && !m.contains(a));
        assert!(m.is_inadmissible(b), "removing a left b parked");
        assert_eq!(m.queue(CqId(0)).ordered(), [c, b]);
        // b parked again at 0 after an activation: its slot is written, so it is found.
        m.requeue_inadmissible([CqId(0)]);
        assert_eq!(m.heads(|_| true), [(CqId(0), b)]);
        m.requeue(CqId(0), b, key(1), RequeueReason::NoFit);
        assert!(m.is_inadmissible(b) && m.remove(b) && !m.contains(b));
        assert!(m.remove(c) && m.pending_total() == 0);
    }

    /// Parked workloads are found where their slot says, however earlier removals moved them
    /// around the parked list: removed in any order, rekeyed, and activated, each is where the
    /// queue and the slots agree it is.
    #[test]
    fn parked_places_follow_removals() {
        let mut m = QueueManager::new([QueueingStrategy::BestEffortFIFO; 1]);
        let ids: Vec<WorkloadId> = (0..8).map(WorkloadId).collect();
        for &id in &ids {
            m.push(CqId(0), id, SortKey([id.0 as i64, 0, 0]));
        }
        // Park them all, one head per cycle.
        for _ in 0..ids.len() {
            let [(cq, id)] = m.heads(|_| true)[..] else {
                panic!("one head")
            };
            m.requeue(cq, id, SortKey([id.0 as i64, 0, 0]), RequeueReason::NoFit);
        }
        assert!(ids.iter().all(|&id| m.is_inadmissible(id)));
        assert!(m.heads(|_| true).is_empty());
        // Removing the first moves the last into its place; the first again moves another.
        for gone in [ids[0], ids[1], ids[5]] {
            assert!(m.remove(gone) && !m.contains(gone) && !m.remove(gone));
        }
        // A parked workload that was moved is rekeyed where it now sits.
        assert!(m.rekey(ids[7], SortKey([-1, 0, 0])));
        assert_eq!(m.pending_total(), 5);
        let left = [ids[7], ids[2], ids[3], ids[4], ids[6]];
        assert_eq!(m.queue(CqId(0)).ordered(), left);
        for &id in &left {
            assert!(m.is_inadmissible(id) && m.queue(CqId(0)).is_inadmissible(id));
        }
        assert!(m.remove(ids[6]) && m.remove(ids[2]));
        assert_eq!(m.with_parked().collect::<Vec<_>>(), [CqId(0)]);
        m.requeue_inadmissible([CqId(0)]);
        assert!(m.with_parked().next().is_none());
        assert!(!m.is_inadmissible(ids[7]) && m.contains(ids[7]));
        // Active again, in key order: the rekeyed one first.
        assert_eq!(m.heads(|_| true), [(CqId(0), ids[7])]);
        assert_eq!(m.heads(|_| true), [(CqId(0), ids[3])]);
        assert!(m.remove(ids[4]) && m.pending_total() == 0);
    }
}
