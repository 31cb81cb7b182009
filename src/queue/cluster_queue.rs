//! One ClusterQueue's pending workloads: an ordered active set and a parked inadmissible set.

use std::collections::VecDeque;

use smallvec::SmallVec;

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

/// One entry of an active set: the key, then the id (ties on the key go by id).
type Entry = (SortKey, WorkloadId);

/// A queue's active workloads in order, lowest first: sorted runs of entries held contiguously,
/// one run for a queue of up to [`Active::SPLIT`] entries.
///
/// Every cycle pops each queue's head, and most heads come back a moment later (parked, then
/// activated when capacity frees); new workloads are mostly the youngest of their priority. A
/// run is a ring buffer, so the head comes and goes at its front and the youngest at its back
/// without moving the rest, and an entry between is put in place by moving the shorter side.
/// Nothing is allocated per entry: at ten times Kueue's large scale a tree per queue walked
/// from its root through nodes no longer in the cache on each pop and return, and its nodes,
/// freed and allocated as the queues drained and refilled, took fresh pages through the run
/// (BENCHMARKS.md, "A queue's active set in ring buffers…" (stop 51)). A long queue splits
/// its run in two past [`Active::SPLIT`], so a put-in-place moves at most half of one run; a
/// run that shrinks merges with a neighbour, so their number stays in proportion to the
/// entries.
///
/// Invariants: each run is sorted; every entry of a run is below every entry of the next; a
/// run is empty only when it is the only one; no two neighbouring runs are both shorter than
/// [`Active::MERGE`].
#[derive(Debug, Clone, Default)]
struct Active {
    runs: SmallVec<[VecDeque<Entry>; 1]>,
}

impl Active {
    /// A run longer than this splits in two halves.
    const SPLIT: usize = if cfg!(test) { 8 } else { 512 };
    /// A run shorter than this, after a removal, merges with a neighbour if the two together
    /// hold at most half of [`Active::SPLIT`].
    const MERGE: usize = Active::SPLIT / 4;

    fn len(&self) -> usize {
        self.runs.iter().map(VecDeque::len).sum()
    }

    fn is_empty(&self) -> bool {
        self.runs.first().is_none_or(VecDeque::is_empty)
    }

    /// The run `e` belongs in: the first whose last entry is not below it, else the last run.
    fn run_for(&self, e: &Entry) -> usize {
        if self.runs.len() <= 1 {
            return 0;
        }
        let at = self
            .runs
            .partition_point(|r| r.back().is_some_and(|b| b < e));
        at.min(self.runs.len() - 1)
    }

    fn insert(&mut self, e: Entry) {
        if self.runs.is_empty() {
            self.runs.push(VecDeque::new());
        }
        let i = self.run_for(&e);
        let run = &mut self.runs[i];
        match (run.front(), run.back()) {
            (Some(&first), _) if e < first => run.push_front(e),
            (_, Some(&last)) if e < last => {
                let at = run.partition_point(|&x| x < e);
                run.insert(at, e);
            }
            _ => run.push_back(e),
        }
        if run.len() > Active::SPLIT {
            let upper = run.split_off(run.len() / 2);
            self.runs.insert(i + 1, upper);
        }
    }

    fn pop_first(&mut self) -> Option<Entry> {
        let e = self.runs.first_mut()?.pop_front()?;
        self.settle(0);
        Some(e)
    }

    /// Takes `e` out; returns whether it was here.
    fn remove(&mut self, e: Entry) -> bool {
        let i = self.run_for(&e);
        let Some(run) = self.runs.get_mut(i) else {
            return false;
        };
        // The head is the common case: a BestEffortFIFO preemptor taken back out.
        let at = if run.front() == Some(&e) {
            0
        } else {
            match run.binary_search(&e) {
                Ok(at) => at,
                Err(_) => return false,
            }
        };
        run.remove(at);
        self.settle(i);
        true
    }

    /// After run `i` lost an entry: drops it if it is empty and not the only one, or, if it is
    /// short, merges it with a neighbour (the next, else the previous) when the two together
    /// hold at most half of [`Active::SPLIT`]. So no two neighbouring runs are both short.
    fn settle(&mut self, i: usize) {
        if self.runs.len() <= 1 || self.runs[i].len() >= Active::MERGE {
            return;
        }
        if self.runs[i].is_empty() {
            self.runs.remove(i);
            return;
        }
        let fits =
            |a: &VecDeque<Entry>, b: &VecDeque<Entry>| a.len() + b.len() <= Active::SPLIT / 2;
        let lo = if self
            .runs
            .get(i + 1)
            .is_some_and(|next| fits(&self.runs[i], next))
        {
            i
        } else if i > 0 && fits(&self.runs[i - 1], &self.runs[i]) {
            i - 1
        } else {
            return;
        };
        let upper = self.runs.remove(lo + 1);
        self.runs[lo].extend(upper);
    }

    /// In order, lowest first.
    fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.runs.iter().flatten()
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

    /// Asks for the cache line of the active head (a hint, see [`wasq_alloc::prefetch`]).
    pub fn prefetch_head(&self) {
        if let Some(e) = self.active.runs.first().and_then(VecDeque::front) {
            wasq_alloc::prefetch(e, 1);
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

    /// Asks for the lines [`PendingQueue::activate_all`] reads first: the parked list and the
    /// ends of the first active run (a hint, see [`wasq_alloc::prefetch`]).
    pub fn prefetch_parked(&self) {
        if !self.inadmissible.is_empty() {
            let parked = self.inadmissible.as_slice();
            wasq_alloc::prefetch_bytes(parked, size_of_val(parked).min(256));
        }
        if let Some(run) = self.active.runs.first() {
            if let Some(e) = run.front() {
                wasq_alloc::prefetch(e, 1);
            }
            if let Some(e) = run.back() {
                wasq_alloc::prefetch(e, 1);
            }
        }
    }

    /// Moves every parked workload to the active set.
    pub fn activate_all(&mut self) {
        // Drained, not dropped: the list keeps its capacity for the next parked heads.
        let mut parked = std::mem::take(&mut self.inadmissible);
        for (id, key) in parked.drain(..) {
            self.push(id, key);
        }
        self.inadmissible = parked;
    }

    /// The workload parked at `at`, if any.
    pub fn parked_id(&self, at: usize) -> Option<WorkloadId> {
        self.inadmissible.get(at).map(|&(id, _)| id)
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

    /// Bytes this queue holds on the heap for its active and parked workloads (capacity, for
    /// memory accounting).
    pub fn heap_bytes(&self) -> usize {
        let entry = size_of::<Entry>();
        let runs = self
            .active
            .runs
            .iter()
            .map(VecDeque::capacity)
            .sum::<usize>()
            * entry;
        let spilled = if self.active.runs.spilled() {
            self.active.runs.capacity() * size_of::<VecDeque<Entry>>()
        } else {
            0
        };
        runs + spilled + self.inadmissible.capacity() * size_of::<(WorkloadId, SortKey)>()
    }

    /// Whether any workload is active here.
    pub fn has_active(&self) -> bool {
        !self.active.is_empty()
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
    use proptest::test_runner::TestCaseError;
    use std::collections::BTreeSet;

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

    /// Checks [`Active`]'s invariants: runs sorted, each below the next, within the bound,
    /// empty only when alone, and no two neighbours both short.
    fn check_runs(active: &Active) -> Result<(), TestCaseError> {
        let runs = &active.runs;
        for (i, run) in runs.iter().enumerate() {
            prop_assert!(run.len() <= Active::SPLIT, "run {i} holds {}", run.len());
            prop_assert!(
                !run.is_empty() || runs.len() == 1,
                "empty run {i} of {}",
                runs.len()
            );
            prop_assert!(run.iter().zip(run.iter().skip(1)).all(|(a, b)| a < b));
            if let Some(next) = runs.get(i + 1) {
                prop_assert!(run.back() < next.front(), "run {i} not below run {}", i + 1);
            }
        }
        // No two neighbours both short, so at most one short run beside each long one: the
        // runs stay in proportion to the entries.
        let short = |r: &VecDeque<Entry>| r.len() < Active::MERGE;
        prop_assert!(
            !runs
                .iter()
                .zip(runs.iter().skip(1))
                .any(|(a, b)| short(a) && short(b))
        );
        prop_assert!(runs.len() <= 1 + 2 * active.len() / Active::MERGE);
        Ok(())
    }

    proptest! {
        /// Any sequence of inserts, removals and pops answers, and leaves the same entries in
        /// the same order, as a `BTreeSet` given the same sequence; the runs keep their
        /// invariants throughout, through splits and merges.
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
                prop_assert_eq!(active.is_empty(), reference.is_empty());
                prop_assert!(active.iter().eq(reference.iter()));
                check_runs(&active)?;
            }
        }
    }

    /// A head put back after being popped goes to the front of its run, the youngest to the
    /// back, a long queue splits into runs and drains through them in order.
    #[test]
    fn heads_come_and_go_at_the_front_of_the_first_run() {
        let mut active = Active::default();
        let e = |k: i64| (SortKey([k, 0, 0]), WorkloadId(k as u32));
        for k in 0..100 {
            active.insert(e(k));
        }
        assert!(
            active.runs.len() > 1,
            "100 entries split past {}",
            Active::SPLIT
        );
        assert_eq!(active.pop_first(), Some(e(0)));
        let first = active.runs[0].len();
        active.insert(e(0));
        assert_eq!(active.runs[0].front(), Some(&e(0)));
        assert_eq!(
            active.runs[0].len(),
            first + 1,
            "put back into the first run"
        );
        active.insert(e(100));
        assert_eq!(active.runs.last().and_then(|r| r.back()), Some(&e(100)));
        let order: Vec<i64> = std::iter::from_fn(|| active.pop_first())
            .map(|(k, _)| k.0[0])
            .collect();
        assert_eq!(order, (0..=100).collect::<Vec<_>>());
        assert_eq!(active.runs.len(), 1, "drained to one empty run");
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
