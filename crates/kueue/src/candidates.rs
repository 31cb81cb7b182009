//! Preemption candidates and Kueue's `CandidatesOrdering`.

use std::cmp::{Ordering, Reverse};

use crate::NodeId;

/// How a candidate relates to the preemptor (Kueue's preemption variants).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CandidateKind {
    /// In the preemptor's own ClusterQueue (`InClusterQueue`).
    SameQueue,
    /// In a queue over its quota where the preemptor stays within its nominal quota
    /// (`InCohortReclamation`, hierarchical advantage).
    HierarchicalReclaim,
    /// Reclaim that requires the preemptor not to borrow afterwards (`InCohortReclamation`).
    ReclaimWithoutBorrowing,
    /// Reclaim allowed while the preemptor borrows (`InCohortReclaimWhileBorrowing`).
    ReclaimWhileBorrowing,
    /// Fair sharing: a workload of a borrowing ClusterQueue of the cohort tree
    /// (`InCohortFairSharing`).
    FairSharing,
}

impl CandidateKind {
    /// Kueue's reason for the victim's `Preempted` condition.
    pub fn reason(self) -> &'static str {
        match self {
            CandidateKind::SameQueue => "InClusterQueue",
            CandidateKind::HierarchicalReclaim | CandidateKind::ReclaimWithoutBorrowing => {
                "InCohortReclamation"
            }
            CandidateKind::ReclaimWhileBorrowing => "InCohortReclaimWhileBorrowing",
            CandidateKind::FairSharing => "InCohortFairSharing",
        }
    }
}

/// Preemption candidates by index (`0..len()`), whichever form a side keeps them in.
pub trait Candidates {
    /// How many candidates there are.
    fn len(&self) -> usize;
    /// How candidate `i` relates to the preemptor.
    fn kind(&self, i: u32) -> CandidateKind;
    /// Whether it is already being evicted.
    fn evicted(&self, i: u32) -> bool;
    /// Its ClusterQueue's id (as [`Tree::cluster_queue_node`](crate::Tree) takes it).
    fn cluster_queue(&self, i: u32) -> u32;
    /// Its effective priority.
    fn priority(&self, i: u32) -> i64;
    /// When its quota was reserved (ms).
    fn admitted(&self, i: u32) -> i64;
    /// A stable handle of its workload, unique among the candidates (the order's last word).
    fn workload(&self, i: u32) -> u32;
    /// Its LocalQueue's admission-fair-sharing usage, when its ClusterQueue uses admission
    /// fair sharing.
    fn local_queue_usage(&self, i: u32) -> Option<f64>;
    /// For reclaim: the cohort under which it was found (the lowest common ancestor of its
    /// ClusterQueue and the preemptor's).
    fn lca(&self, i: u32) -> Option<NodeId>;
    /// The quota it holds: `(flavor-resource, amount)` pairs.
    fn usage(&self, i: u32) -> impl Iterator<Item = (u32, i64)> + '_;

    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The producer's promise that the candidates are listed in [`candidate_order`] (wasq's
    /// host sorts them so before it asks any policy): [`candidate_order`] of a subset listed
    /// in increasing index then returns it as it is. `false` unless a table says so.
    fn in_candidate_order(&self) -> bool {
        false
    }
}

/// Kueue's `CandidatesOrdering` as a sort key, smallest first: not evicted, in the
/// preemptor's own ClusterQueue `own`, priority, admission time latest first, workload
/// handle. A total order: this is the whole rule but admission fair sharing's (see
/// [`candidate_order`]).
pub type OrderKey = (bool, bool, i64, Reverse<i64>, u32);

/// Candidate `i`'s [`OrderKey`].
#[inline]
pub fn order_key<C: Candidates + ?Sized>(t: &C, i: u32, own: u32) -> OrderKey {
    (
        !t.evicted(i),
        t.cluster_queue(i) == own,
        t.priority(i),
        Reverse(t.admitted(i)),
        t.workload(i),
    )
}

/// Kueue's `CandidatesOrdering` without its admission-fair-sharing rule: candidate `a` of
/// table `ta` against candidate `b` of table `tb`.
pub fn compare<A: Candidates + ?Sized, B: Candidates + ?Sized>(
    ta: &A,
    a: u32,
    tb: &B,
    b: u32,
    own: u32,
) -> Ordering {
    order_key(ta, a, own).cmp(&order_key(tb, b, own))
}

/// [`order_key`] packed into one integer that compares the same way, when the figures fit:
/// bit 127 not evicted, bit 126 in the preemptor's own queue, 32 bits of priority (offset to
/// be unsigned), 44 bits of admission time (inverted: latest first), 32 bits of workload
/// handle, and [`INDEX_BITS`] bits left 0 for the candidate's index. `None` for a priority
/// outside `i32` (Kueue's priorities are `int32`) or an admission time outside `0 .. 2^44` ms
/// (about 557 years after 1970).
pub fn packed_order_key<C: Candidates + ?Sized>(t: &C, i: u32, own: u32) -> Option<u128> {
    const TIME_BITS: u32 = 44;
    let priority = i32::try_from(t.priority(i)).ok()?;
    let reserved = u64::try_from(t.admitted(i)).ok()?;
    if reserved >= 1 << TIME_BITS {
        return None;
    }
    let priority = u128::from((priority as u32) ^ 0x8000_0000);
    let latest_first = u128::from((1u64 << TIME_BITS) - 1 - reserved);
    Some(
        u128::from(!t.evicted(i)) << 127
            | u128::from(t.cluster_queue(i) == own) << 126
            | priority << 94
            | latest_first << (32 + INDEX_BITS)
            | u128::from(t.workload(i)) << INDEX_BITS,
    )
}

/// The low bits of a packed key that carry the candidate's position (below the workload
/// handle, so they never decide between two candidates: handles are unique).
const INDEX_BITS: u32 = 18;

/// Within one ClusterQueue under admission fair sharing: evicted first, then LocalQueues with
/// more usage first (no usage counts as 0), then lower priority, most recently admitted, the
/// workload handle.
fn within_queue<C: Candidates + ?Sized>(t: &C, a: u32, b: u32) -> Ordering {
    let usage = |i: u32| t.local_queue_usage(i).unwrap_or(0.0);
    t.evicted(b)
        .cmp(&t.evicted(a))
        .then_with(|| usage(b).total_cmp(&usage(a)))
        .then_with(|| t.priority(a).cmp(&t.priority(b)))
        .then_with(|| t.admitted(b).cmp(&t.admitted(a)))
        .then_with(|| t.workload(a).cmp(&t.workload(b)))
}

/// Kueue's candidate order of the candidates listed in `subset` (indices into `t`), for a
/// preemptor of ClusterQueue `own`: sorted by [`order_key`], then each admission-fair-sharing
/// ClusterQueue's candidates re-sorted among the positions that queue holds, LocalQueue usage
/// first. (Kueue compares usage only between candidates of one ClusterQueue, which makes its
/// comparator cyclic across queues: usage decides within a queue, priority across them; this
/// is its order made total.)
///
/// A table [`Candidates::in_candidate_order`] with `subset` in increasing index is returned as
/// it is; an already sorted list is confirmed in one pass.
pub fn candidate_order<C: Candidates + ?Sized>(t: &C, subset: &[u32], own: u32) -> Vec<u32> {
    if t.in_candidate_order() && subset.is_sorted() {
        return subset.to_vec();
    }
    let mut order = sorted_by_key(t, subset, own);
    let mut queues: Vec<u32> = order
        .iter()
        .filter(|&&i| t.local_queue_usage(i).is_some())
        .map(|&i| t.cluster_queue(i))
        .collect();
    queues.sort_unstable();
    queues.dedup();
    for cq in queues {
        let positions: Vec<usize> = (0..order.len())
            .filter(|&p| t.cluster_queue(order[p]) == cq)
            .collect();
        let mut members: Vec<u32> = positions.iter().map(|&p| order[p]).collect();
        members.sort_by(|&a, &b| within_queue(t, a, b));
        for (p, m) in positions.into_iter().zip(members) {
            order[p] = m;
        }
    }
    order
}

/// `subset` sorted by [`order_key`], keys computed once per candidate: usually packed into
/// one integer each ([`packed_order_key`]), compared in two instructions rather than field by
/// field (sorting tuples was 8% of a native run at Kueue's large scale).
fn sorted_by_key<C: Candidates + ?Sized>(t: &C, subset: &[u32], own: u32) -> Vec<u32> {
    let mut packed: Vec<u128> = Vec::new();
    if subset.len() <= 1 << INDEX_BITS {
        packed.reserve_exact(subset.len());
        for (p, &i) in subset.iter().enumerate() {
            let Some(k) = packed_order_key(t, i, own) else {
                break;
            };
            packed.push(k | p as u128);
        }
    }
    if packed.len() == subset.len() {
        // The position rides in each key's low bits: one 16-byte integer per candidate.
        if !packed.is_sorted() {
            packed.sort_unstable();
        }
        let mask = (1u128 << INDEX_BITS) - 1;
        return packed
            .into_iter()
            .map(|k| subset[(k & mask) as usize])
            .collect();
    }
    let mut keyed: Vec<(OrderKey, u32)> =
        subset.iter().map(|&i| (order_key(t, i, own), i)).collect();
    if !keyed.is_sorted() {
        keyed.sort_unstable();
    }
    keyed.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Cand, Table, numbers};

    fn cand(workload: u32, cq: u32, priority: i64, usage: Option<f64>) -> Cand {
        Cand {
            kind: CandidateKind::FairSharing,
            priority,
            local_queue_usage: usage,
            ..Cand::new(workload, cq)
        }
    }

    #[test]
    fn local_queue_usage_orders_within_a_queue_and_priority_across_queues() {
        // Kueue's pairwise rule is cyclic here: a < b (usage), b < c (priority), c < a.
        let t = Table::of(vec![
            cand(0, 1, 10, Some(5.0)),
            cand(1, 1, 0, Some(3.0)),
            cand(2, 2, 5, None),
        ]);
        // Priority order is b, c, a; queue 1 holds positions 0 and 2, usage puts a first.
        assert_eq!(candidate_order(&t, &[0, 1, 2], 9), vec![0, 2, 1]);
    }

    #[test]
    fn any_mix_of_queues_usage_and_priorities_sorts_without_a_cycle() {
        let mut next = numbers(7);
        let t = Table::of(
            (0..300)
                .map(|i| {
                    let cq = next(4) as u32;
                    let usage = (cq < 2).then(|| next(5) as f64);
                    cand(i, cq, next(20) as i64, usage)
                })
                .collect(),
        );
        let all: Vec<u32> = (0..300).collect();
        let order = candidate_order(&t, &all, 3);
        let mut seen = order.clone();
        seen.sort();
        assert_eq!(seen, all);
        // Within an admission-fair-sharing queue, usage never increases along the order.
        for cq in [0, 1] {
            let usage: Vec<f64> = order
                .iter()
                .filter(|&&i| t.rows[i as usize].cluster_queue == cq)
                .map(|&i| t.rows[i as usize].local_queue_usage.unwrap_or(0.0))
                .collect();
            assert!(usage.windows(2).all(|w| w[0] >= w[1]), "{usage:?}");
        }
    }

    /// The packed key orders any two candidates as the tuple key does, and the order is the
    /// comparator's whether the keys pack or not (a priority outside `i32` or a negative
    /// admission time does not).
    #[test]
    fn packed_keys_order_as_tuples_and_the_order_is_the_comparators() {
        let mut next = numbers(3);
        let any = |next: &mut dyn FnMut(u64) -> u64, w: u32| {
            let priority = match next(3) {
                0 => next(6) as i64 - 3,
                1 => next(u64::from(u32::MAX)) as i64 + i64::from(i32::MIN),
                _ => (next(u64::MAX) as i64).wrapping_mul(7),
            };
            let admitted = if next(2) == 0 {
                next(4) as i64
            } else {
                next(1 << 44) as i64
            };
            Cand {
                priority,
                admitted,
                evicted: next(2) == 0,
                ..Cand::new(w, next(3) as u32)
            }
        };
        for round in 0..400 {
            let n = next(40) as u32;
            let mut rows: Vec<Cand> = (0..n).map(|w| any(&mut next, w * 7 % 41)).collect();
            if round % 5 == 0 && n > 0 {
                rows[0].admitted = -5;
            }
            let t = Table::of(rows);
            for a in 0..n {
                for b in 0..n.min(4) {
                    if let (Some(pa), Some(pb)) =
                        (packed_order_key(&t, a, 1), packed_order_key(&t, b, 1))
                    {
                        assert_eq!(pa.cmp(&pb), compare(&t, a, &t, b, 1));
                    }
                }
            }
            let all: Vec<u32> = (0..n).collect();
            let mut expected = all.clone();
            expected.sort_by(|&x, &y| compare(&t, x, &t, y, 1));
            assert_eq!(candidate_order(&t, &all, 1), expected, "round {round}");
            // A subset keeps its members, in the same relative order.
            let subset: Vec<u32> = all.iter().copied().filter(|i| i % 3 != 1).collect();
            let sub_expected: Vec<u32> = expected.iter().copied().filter(|i| i % 3 != 1).collect();
            assert_eq!(candidate_order(&t, &subset, 1), sub_expected);
        }
    }

    #[test]
    fn a_table_in_candidate_order_is_trusted_for_a_sorted_subset() {
        // Out of order on purpose: the table's promise is taken at its word.
        let mut t = Table::of(vec![cand(0, 0, 5, None), cand(1, 0, 0, None)]);
        assert_eq!(candidate_order(&t, &[0, 1], 9), vec![1, 0]);
        t.in_order = true;
        assert_eq!(candidate_order(&t, &[0, 1], 9), vec![0, 1]);
        assert_eq!(candidate_order(&t, &[1, 0], 9), vec![1, 0]);
    }
}
