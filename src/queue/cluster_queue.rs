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
    /// The active workloads, ordered by key then id.
    active: Active,
    /// Parked workloads with their keys, in no order. A list rather than a map: parking is a
    /// push and activating a drain, where a hash table per ClusterQueue missed the cache on
    /// most parked heads at ten times Kueue's scale. Whoever takes one out says where it sits
    /// ([`PendingQueue::requeue`] tells; [`QueueManager`](super::QueueManager) keeps it).
    inadmissible: Vec<(WorkloadId, SortKey)>,
    /// A BestEffortFIFO preemptor stays at the head until it is admitted or fails; with the key
    /// it is queued under.
    sticky: Option<(WorkloadId, SortKey)>,
}

/// A queue's active workloads in order: the lowest keys in a short array, the rest in a tree.
///
/// Every cycle pops each queue's head, and most heads come back a moment later (parked, then
/// activated when capacity frees): at ten times Kueue's large scale a tree alone made each of
/// those a walk from its root and a shift of its leftmost leaf, in 10,000 trees no longer in
/// the cache (BENCHMARKS.md, "A queue's lowest keys in a short array; what did not pay (stop
/// 44)"). In `front`, highest first, popping the head is taking the last entry, and putting a
/// head back is pushing it there again. The tree is reached when `front` runs dry (it takes
/// [`Active::REFILL`] at once), when a full `front` takes a lower key, and for keys above all of
/// `front` (new workloads, mostly: they are younger).
///
/// Invariant: every entry of `front` is below every entry of `back`.
#[derive(Debug, Clone, Default)]
struct Active {
    /// The lowest entries, highest first; at most [`Active::FRONT`].
    front: Vec<(SortKey, WorkloadId)>,
    back: BTreeSet<(SortKey, WorkloadId)>,
}

impl Active {
    /// The most entries `front` holds; inserting below all of a full `front` sends its highest
    /// to `back`.
    const FRONT: usize = 32;
    /// How many entries a dry `front` takes from `back` at once.
    const REFILL: usize = 16;

    fn len(&self) -> usize {
        self.front.len() + self.back.len()
    }

    fn insert(&mut self, e: (SortKey, WorkloadId)) {
        match self.front.first() {
            Some(&highest) if e < highest => {
                // Full: the highest goes to the tree first (it is below all of the tree), so
                // that the array never grows past its bound.
                if self.front.len() == Active::FRONT {
                    self.front.remove(0);
                    self.back.insert(highest);
                }
                // A head put back is the lowest: its place, the end, is found without a search.
                let at = if self.front.last().is_some_and(|&low| e < low) {
                    self.front.len()
                } else {
                    self.front.partition_point(|&x| x > e)
                };
                self.front.insert(at, e);
            }
            None if self.back.is_empty() => self.front.push(e),
            _ => {
                self.back.insert(e);
            }
        }
    }

    fn pop_first(&mut self) -> Option<(SortKey, WorkloadId)> {
        if self.front.is_empty() {
            self.front
                .extend(std::iter::from_fn(|| self.back.pop_first()).take(Active::REFILL));
            self.front.reverse();
        }
        self.front.pop()
    }

    /// Takes `e` out; returns whether it was here.
    fn remove(&mut self, e: (SortKey, WorkloadId)) -> bool {
        match self.front.first() {
            Some(&highest) if e <= highest => {
                match self.front.binary_search_by(|x| e.cmp(x)) {
                    Ok(at) => {
                        self.front.remove(at);
                        true
                    }
                    // Below the highest of `front`, so not in `back` either.
                    Err(_) => false,
                }
            }
            _ => self.back.remove(&e),
        }
    }

    /// In order, lowest first.
    fn iter(&self) -> impl Iterator<Item = &(SortKey, WorkloadId)> {
        self.front.iter().rev().chain(self.back.iter())
    }
}

impl PendingQueue {
    pub fn new(strategy: QueueingStrategy) -> PendingQueue {
        PendingQueue {
            strategy,
            active: Active::default(),
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
        self.pop_keyed().map(|(id, _)| id)
    }

    /// [`PendingQueue::pop`], with the key the head was queued under.
    pub fn pop_keyed(&mut self) -> Option<(WorkloadId, SortKey)> {
        if let Some((id, key)) = self.sticky
            && self.active.remove((key, id))
        {
            return Some((id, key));
        }
        let (key, id) = self.active.pop_first()?;
        Some((id, key))
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
        self.active.remove((key, id))
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
        if !self.active.remove((old, id)) {
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
    use proptest::prelude::*;

    /// An operation on an active set: insert, remove, or pop the lowest.
    #[derive(Debug, Clone)]
    enum Op {
        Insert(i64, u32),
        Remove(i64, u32),
        Pop,
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few distinct keys and ids, so that removals hit, ties on the key happen, and runs
        // of pops drain `front` and refill it from `back`.
        prop_oneof![
            3 => (0i64..60, 0u32..80).prop_map(|(k, id)| Op::Insert(k, id)),
            2 => (0i64..60, 0u32..80).prop_map(|(k, id)| Op::Remove(k, id)),
            2 => Just(Op::Pop),
        ]
    }

    proptest! {
        /// Any sequence of inserts, removals and pops answers, and leaves the same entries in
        /// the same order, as a `BTreeSet` given the same sequence; `front` stays below `back`
        /// and within its bound.
        #[test]
        fn active_set_behaves_as_an_ordered_set(ops in proptest::collection::vec(op(), 0..400)) {
            let (mut active, mut reference) = (Active::default(), BTreeSet::new());
            for op in ops {
                match op {
                    Op::Insert(k, id) => {
                        let e = (SortKey([k, 0, 0]), WorkloadId(id));
                        // The queue never holds a workload twice; neither does the model.
                        if !reference.iter().any(|&(_, w)| w == e.1) {
                            active.insert(e);
                            reference.insert(e);
                        }
                    }
                    Op::Remove(k, id) => {
                        let e = (SortKey([k, 0, 0]), WorkloadId(id));
                        prop_assert_eq!(active.remove(e), reference.remove(&e));
                    }
                    Op::Pop => prop_assert_eq!(active.pop_first(), reference.pop_first()),
                }
                prop_assert_eq!(active.len(), reference.len());
                prop_assert!(active.iter().eq(reference.iter()));
                prop_assert!(active.front.len() <= Active::FRONT);
                if let (Some(high), Some(low)) = (active.front.first(), active.back.first()) {
                    prop_assert!(high < low, "front {high:?} not below back {low:?}");
                }
            }
        }
    }

    /// A head put back after being popped goes to the end of `front` without touching `back`,
    /// and a queue longer than `front` refills it from `back` in order.
    #[test]
    fn heads_come_and_go_at_the_end_of_front() {
        let mut active = Active::default();
        let e = |k: i64| (SortKey([k, 0, 0]), WorkloadId(k as u32));
        for k in 0..100 {
            active.insert(e(k));
        }
        assert_eq!(active.front.len(), 1, "younger keys go to the tree");
        assert_eq!(active.pop_first(), Some(e(0)));
        assert_eq!(active.pop_first(), Some(e(1)), "refilled from the tree");
        assert_eq!(active.front.len(), Active::REFILL - 1);
        active.insert(e(1));
        assert_eq!(active.front.last(), Some(&e(1)));
        assert_eq!(active.back.len(), 100 - 1 - Active::REFILL);
        let order: Vec<i64> = std::iter::from_fn(|| active.pop_first())
            .map(|(k, _)| k.0[0])
            .collect();
        assert_eq!(order, (1..100).collect::<Vec<_>>());
    }

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
