//! Kueue's classical victim selection: order candidates, remove them one by one on a copy of the
//! quota snapshot until the preemptor fits, then add back those that were not needed.

use std::cmp::{Ordering, Reverse};

use crate::api::BorrowWithinCohortPolicy;
use crate::cluster::{Millis, WorkloadId};
use crate::policy::{
    Candidate, CandidateKind, PolicyError, PolicyRef, PreemptionPolicy, PreemptionRequest,
    VictimSet,
};
use crate::quota::{UsageOverlay, UsageRead, UsageWrite};

#[derive(Debug, Clone, Copy, Default)]
pub struct KueuePreemption;

/// Kueue's `CandidatesOrdering` without its admission-fair-sharing rule: evicted first, other
/// queues before the preemptor's own, lower priority first, most recently admitted first, then
/// a stable id. A total order (see [`candidate_order`] for the whole rule).
pub fn candidates_ordering(a: &Candidate, b: &Candidate, own: crate::cluster::CqId) -> Ordering {
    b.evicted
        .cmp(&a.evicted)
        .then_with(|| (a.cluster_queue == own).cmp(&(b.cluster_queue == own)))
        .then_with(|| by_priority_then_recency(a, b))
}

/// [`candidates_ordering`] as a sort key, smallest first: not evicted, in the preemptor's own
/// queue, priority, admission time latest first, workload handle.
type OrderKey = (bool, bool, i64, Reverse<Millis>, WorkloadId);

fn order_key(c: &Candidate, own: crate::cluster::CqId) -> OrderKey {
    (
        !c.evicted,
        c.cluster_queue == own,
        c.priority,
        Reverse(c.reserved_at),
        c.workload,
    )
}

/// [`order_key`] packed into one integer that compares the same way, when the figures fit:
/// bit 127 not evicted, bit 126 in the preemptor's own queue, 32 bits of priority (offset to
/// be unsigned), 44 bits of admission time (inverted: latest first), 32 bits of workload id,
/// and [`INDEX_BITS`] bits left 0 for the candidate's index. `None` for a priority outside
/// `i32` (Kueue's priorities are `int32`) or an admission time outside `0 .. 2^44` ms (about
/// 557 years after 1970).
fn packed_order_key(c: &Candidate, own: crate::cluster::CqId) -> Option<u128> {
    const TIME_BITS: u32 = 44;
    let priority = i32::try_from(c.priority).ok()?;
    let reserved = u64::try_from(c.reserved_at).ok()?;
    if reserved >= 1 << TIME_BITS {
        return None;
    }
    let priority = u128::from((priority as u32) ^ 0x8000_0000);
    let latest_first = u128::from((1u64 << TIME_BITS) - 1 - reserved);
    Some(
        u128::from(!c.evicted) << 127
            | u128::from(c.cluster_queue == own) << 126
            | priority << 94
            | latest_first << (32 + INDEX_BITS)
            | u128::from(c.workload.0) << INDEX_BITS,
    )
}

/// The low bits of a packed key that carry the candidate's index (below the workload id, so
/// they never decide between two candidates: ids are unique).
const INDEX_BITS: u32 = 18;

/// The indices of `keyed` by key. Already in order (as the host passes candidates to a
/// policy), one pass confirms it.
fn sorted_indices<K: Ord>(mut keyed: Vec<(K, usize)>) -> Vec<usize> {
    if !keyed.is_sorted() {
        keyed.sort_unstable();
    }
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// The end of Kueue's candidate order: lower priority first, most recently admitted first,
/// then a stable id.
fn by_priority_then_recency(a: &Candidate, b: &Candidate) -> Ordering {
    a.priority
        .cmp(&b.priority)
        .then_with(|| b.reserved_at.cmp(&a.reserved_at))
        .then_with(|| a.workload.cmp(&b.workload))
}

/// Within one ClusterQueue under admission fair sharing: evicted first, then LocalQueues with
/// more usage first (no usage counts as 0), then as [`candidates_ordering`].
fn within_queue(a: &Candidate, b: &Candidate) -> Ordering {
    let usage = |c: &Candidate| c.local_queue_usage.unwrap_or(0.0);
    b.evicted
        .cmp(&a.evicted)
        .then_with(|| usage(b).total_cmp(&usage(a)))
        .then_with(|| by_priority_then_recency(a, b))
}

/// Kueue's candidate order of `candidates` (indices). Kueue compares LocalQueue usage only
/// between candidates of one ClusterQueue, which makes its comparator cyclic across queues
/// (usage decides within a queue, priority across them); wasq sorts by the rest of the rule,
/// then re-sorts each admission-fair-sharing queue's candidates among the positions that queue
/// holds, with usage first. Without admission fair sharing this is [`candidates_ordering`].
pub fn candidate_order(candidates: &[Candidate], own: crate::cluster::CqId) -> Vec<usize> {
    // Keys once per candidate: a comparator called O(n log n) times re-read both candidates
    // every time. Usually each key packs into one integer, compared in two instructions
    // rather than field by field (sorting tuples was 8% of a native run at Kueue's large
    // scale).
    let mut packed: Vec<u128> = Vec::with_capacity(candidates.len());
    if candidates.len() <= 1 << INDEX_BITS {
        for (i, c) in candidates.iter().enumerate() {
            let Some(k) = packed_order_key(c, own) else {
                break;
            };
            packed.push(k | i as u128);
        }
    }
    let mut order = if packed.len() == candidates.len() {
        // The index rides in each key's low bits: one 16-byte integer per candidate to sort.
        if !packed.is_sorted() {
            packed.sort_unstable();
        }
        let mask = (1u128 << INDEX_BITS) - 1;
        packed.into_iter().map(|k| (k & mask) as usize).collect()
    } else {
        sorted_indices(
            candidates
                .iter()
                .enumerate()
                .map(|(i, c)| (order_key(c, own), i))
                .collect(),
        )
    };
    let mut queues: Vec<crate::cluster::CqId> = candidates
        .iter()
        .filter(|c| c.local_queue_usage.is_some())
        .map(|c| c.cluster_queue)
        .collect();
    queues.sort();
    queues.dedup();
    for cq in queues {
        let positions: Vec<usize> = (0..order.len())
            .filter(|&p| candidates[order[p]].cluster_queue == cq)
            .collect();
        let mut members: Vec<usize> = positions.iter().map(|&p| order[p]).collect();
        members.sort_by(|&a, &b| within_queue(&candidates[a], &candidates[b]));
        for (p, m) in positions.into_iter().zip(members) {
            order[p] = m;
        }
    }
    order
}

/// Kueue's `workloadFits`: every request within what the preemptor's queue has available, and
/// without borrowing unless allowed; with TAS podSets, also a placement on the leaf capacity
/// left once `victims` (indices into the candidates, those removed from `usage`) are gone.
pub fn fits_after(
    req: &PreemptionRequest<'_>,
    usage: &impl UsageRead,
    allow_borrowing: bool,
    victims: &[usize],
) -> bool {
    fits_after_but(req, usage, allow_borrowing, victims, None)
}

/// [`fits_after`] with the victim at position `but` of `victims` back in place (Kueue's
/// fill-back tries each victim back in turn). The list of workloads gone is made only for a
/// preemptor with TAS podSets: a fill-back over a hundred victims made and dropped a copy of
/// the list per step.
pub fn fits_after_but(
    req: &PreemptionRequest<'_>,
    usage: &impl UsageRead,
    allow_borrowing: bool,
    victims: &[usize],
    but: Option<usize>,
) -> bool {
    let quota = req.requests.iter().all(|&(fr, v)| {
        (allow_borrowing || !req.tree.borrowing_with(usage, req.node, fr, v))
            && v <= req.tree.available(usage, req.node, fr)
    });
    quota
        && req.topology.is_none_or(|t| {
            let gone: Vec<_> = victims
                .iter()
                .enumerate()
                .filter(|&(m, _)| Some(m) != but)
                .map(|(_, &i)| req.candidates[i].workload)
                .collect();
            t.fits_without(&gone)
        })
}

/// Takes candidate `c`'s quota out of `usage` (`sign` = 1) or puts it back (`sign` = -1).
pub(crate) fn remove_candidate(
    req: &PreemptionRequest<'_>,
    usage: &mut impl UsageWrite,
    c: &Candidate,
    sign: i64,
) {
    for &(fr, v) in &c.usage {
        req.tree.add_usage(usage, c.node, fr, -sign * v);
    }
}

/// Kueue's `candidateIsValid`: reclaim only from queues (and cohorts up to the common ancestor)
/// that are still over their quota.
fn still_valid(
    req: &PreemptionRequest<'_>,
    usage: &impl UsageRead,
    c: &Candidate,
    allow: bool,
) -> bool {
    if c.cluster_queue == req.cluster_queue {
        return true;
    }
    if allow && c.kind == CandidateKind::ReclaimWithoutBorrowing {
        return false;
    }
    if req
        .tree
        .within_nominal(usage, c.node, &req.needs_preemption)
    {
        return false;
    }
    for node in req.tree.ancestors(c.node) {
        if Some(node) == c.lca {
            break;
        }
        if req.tree.within_nominal(usage, node, &req.needs_preemption) {
            return false;
        }
    }
    true
}

impl PreemptionPolicy for KueuePreemption {
    fn id(&self) -> PolicyRef {
        PolicyRef::builtin()
    }

    fn select_victims(
        &self,
        req: &PreemptionRequest<'_>,
    ) -> Result<Option<VictimSet>, PolicyError> {
        Ok(select_victims(req))
    }
}

/// `order` stably partitioned into the six groups `group` numbers 0 to 5 (smallest first),
/// counted rather than sorted; as it is when already grouped (the host's candidate order puts
/// evicted candidates first and the preemptor's own queue last, so it usually is).
fn grouped(order: Vec<usize>, group: impl Fn(usize) -> usize) -> Vec<usize> {
    let mut start = [0usize; 7];
    let (mut last, mut in_groups) = (0, true);
    for &i in &order {
        let g = group(i);
        in_groups &= last <= g;
        last = g;
        start[g + 1] += 1;
    }
    if in_groups {
        return order;
    }
    for g in 1..start.len() {
        start[g] += start[g - 1];
    }
    let mut out = vec![0; order.len()];
    for &i in &order {
        let g = group(i);
        out[start[g]] = i;
        start[g] += 1;
    }
    out
}

/// Kueue's victim selection: fair sharing's when the request carries its strategies, else the
/// classical one.
pub fn select_victims(req: &PreemptionRequest<'_>) -> Option<VictimSet> {
    if let Some(strategies) = req.fair_sharing {
        return super::fair_preemption::select_victims(req, strategies);
    }
    // The candidates come in Kueue's candidate order (`PreemptionRequest::candidates`), as
    // the scheduler promises a plugin (`request.candidates`, which the SDK trusts in the same
    // way): sorting them again would only confirm it.
    let idx: Vec<usize> = (0..req.candidates.len()).collect();
    debug_assert_eq!(
        candidate_order(&req.candidates, req.cluster_queue),
        idx,
        "candidates out of Kueue's candidate order"
    );
    let class = |i: &usize| match req.candidates[*i].kind {
        CandidateKind::HierarchicalReclaim => 0,
        CandidateKind::ReclaimWithoutBorrowing
        | CandidateKind::ReclaimWhileBorrowing
        | CandidateKind::FairSharing => 1,
        CandidateKind::SameQueue => 2,
    };
    let no_hierarchical = !idx.iter().any(|i| class(i) == 0);
    let no_other = !idx.iter().any(|i| class(i) < 2);
    // Evicted ones of each class first, then the rest, each class in candidate order.
    let list = grouped(idx, |i| {
        usize::from(!req.candidates[i].evicted) * 3 + class(&i)
    });

    let forbidden = req.config.borrow_within_cohort == BorrowWithinCohortPolicy::Never;
    let under_nominal = req
        .needs_preemption
        .iter()
        .all(|&fr| req.tree.quota(req.node, fr).nominal > req.usage.get(req.node, fr));
    let attempts: &[bool] = if no_other || (forbidden && !under_nominal) {
        &[true]
    } else if forbidden && no_hierarchical {
        &[false, true]
    } else {
        &[true, false]
    };

    for &allow in attempts {
        let mut usage = UsageOverlay::new(req.usage);
        let mut targets: Vec<usize> = Vec::new();
        for &i in &list {
            let c = &req.candidates[i];
            if !still_valid(req, &usage, c, allow) {
                continue;
            }
            remove_candidate(req, &mut usage, c, 1);
            targets.push(i);
            if fits_after(req, &usage, allow, &targets) {
                // Fill back: re-add every target but the last, keeping those not needed.
                let mut k = targets.len().saturating_sub(1);
                while k > 0 {
                    k -= 1;
                    let c = &req.candidates[targets[k]];
                    remove_candidate(req, &mut usage, c, -1);
                    if fits_after_but(req, &usage, allow, &targets, Some(k)) {
                        targets.swap_remove(k);
                    } else {
                        remove_candidate(req, &mut usage, c, 1);
                    }
                }
                return Some(VictimSet {
                    victims: targets,
                    allow_borrowing: allow,
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod order_tests {
    use super::*;
    use crate::cluster::CqId;

    fn cand(id: u32, cq: u32, priority: i64, usage: Option<f64>) -> Candidate {
        Candidate {
            kind: CandidateKind::FairSharing,
            priority,
            local_queue_usage: usage,
            ..Candidate::test(id, cq)
        }
    }

    /// Pseudo-random numbers below `m` (a linear congruential generator from `seed`).
    fn numbers(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut x = seed;
        move |m| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        }
    }

    /// The counted partition is the stable sort by group, grouped input or not.
    #[test]
    fn grouped_is_a_stable_sort_by_group() {
        let mut next = numbers(11);
        for len in [0usize, 1, 2, 7, 50, 300] {
            for spread in [1u64, 2, 6] {
                let groups: Vec<usize> = (0..len).map(|_| next(spread) as usize).collect();
                let shuffle: Vec<u64> = (0..len).map(|_| next(1000)).collect();
                let mut order: Vec<usize> = (0..len).collect();
                order.sort_by_key(|&i| shuffle[i]);
                let mut expected = order.clone();
                expected.sort_by_key(|&i| groups[i]);
                assert_eq!(grouped(order.clone(), |i| groups[i]), expected);
                // Already grouped: returned as is.
                assert_eq!(grouped(expected.clone(), |i| groups[i]), expected);
            }
        }
    }

    #[test]
    fn local_queue_usage_orders_within_a_queue_and_priority_across_queues() {
        // Kueue's pairwise rule is cyclic here: a < b (usage), b < c (priority), c < a.
        let list = [
            cand(0, 1, 10, Some(5.0)),
            cand(1, 1, 0, Some(3.0)),
            cand(2, 2, 5, None),
        ];
        // Priority order is b, c, a; queue 1 holds positions 0 and 2, usage puts a first.
        assert_eq!(candidate_order(&list, CqId(9)), vec![0, 2, 1]);
    }

    #[test]
    fn any_mix_of_queues_usage_and_priorities_sorts_without_a_cycle() {
        let mut next = numbers(7);
        let list: Vec<Candidate> = (0..300)
            .map(|i| {
                let cq = next(4) as u32;
                let usage = (cq < 2).then(|| next(5) as f64);
                cand(i, cq, next(20) as i64, usage)
            })
            .collect();
        let order = candidate_order(&list, CqId(3));
        let mut seen = order.clone();
        seen.sort();
        assert_eq!(seen, (0..300).collect::<Vec<_>>());
        // Within an admission-fair-sharing queue, usage never increases along the order.
        for cq in [0, 1] {
            let usage: Vec<f64> = order
                .iter()
                .filter(|&&i| list[i].cluster_queue == CqId(cq))
                .map(|&i| list[i].local_queue_usage.unwrap_or(0.0))
                .collect();
            assert!(usage.windows(2).all(|w| w[0] >= w[1]), "{usage:?}");
        }
    }
}

#[cfg(test)]
mod packed_key_tests {
    use proptest::prelude::*;

    use super::*;
    use crate::cluster::CqId;

    fn candidate(id: u32, cq: u32, priority: i64, reserved_at: Millis, evicted: bool) -> Candidate {
        Candidate {
            priority,
            reserved_at,
            evicted,
            ..Candidate::test(id, cq)
        }
    }

    fn any_candidate(priority: impl Strategy<Value = i64>) -> impl Strategy<Value = Candidate> {
        (
            0u32..8,
            0u32..3,
            priority,
            prop_oneof![0i64..4, 0i64..(1 << 44)],
            any::<bool>(),
        )
            .prop_map(|(id, cq, p, t, e)| candidate(id, cq, p, t, e))
    }

    proptest! {
        /// The packed key orders any two candidates as the tuple key does.
        #[test]
        fn packed_keys_order_as_tuples(
            a in any_candidate(prop_oneof![-3i64..3, i64::from(i32::MIN)..=i64::from(i32::MAX)]),
            b in any_candidate(prop_oneof![-3i64..3, i64::from(i32::MIN)..=i64::from(i32::MAX)]),
        ) {
            let own = CqId(1);
            let (pa, pb) = (packed_order_key(&a, own).unwrap(), packed_order_key(&b, own).unwrap());
            prop_assert_eq!(pa.cmp(&pb), order_key(&a, own).cmp(&order_key(&b, own)));
        }

        /// `candidate_order` is Kueue's comparator order whether the keys pack or not (a
        /// priority outside `i32` or a negative admission time does not).
        #[test]
        fn candidate_order_sorts_by_the_comparator(
            list in proptest::collection::vec(any_candidate(prop_oneof![-3i64..3, any::<i64>()]), 0..40),
            negative_time in any::<bool>(),
        ) {
            let mut list = list;
            // Unique workloads, as a cycle's candidates are.
            for (i, c) in list.iter_mut().enumerate() {
                c.workload = WorkloadId(i as u32 * 7 % 41);
                if negative_time && i == 0 {
                    c.reserved_at = -5;
                }
            }
            let own = CqId(1);
            let order = candidate_order(&list, own);
            let mut expected: Vec<usize> = (0..list.len()).collect();
            expected.sort_by(|&x, &y| candidates_ordering(&list[x], &list[y], own));
            prop_assert_eq!(order, expected);
        }
    }
}
