//! Kueue's classical victim selection (without fair sharing): candidates in candidate order,
//! grouped (evicted first; hierarchical reclaim, other reclaim, the preemptor's own queue),
//! removed one by one from a simulated quota snapshot — skipping those whose queue is no longer
//! over its quota — until the preemptor fits, then every victim but the last put back when the
//! preemptor fits without it (fill-back). Borrowing after preemption is tried as Kueue's
//! `borrowWithinCohort` says ([`borrowing_attempts`]).
//!
//! The snapshot is the caller's ([`Removal`]): the host simulates on an overlay of its usage,
//! the SDK on a view of the usage the host sent.

use crate::{CandidateKind, Candidates, NodeId, Tree};

/// Kueue's grouping of candidates: hierarchical reclaim (0), then other ClusterQueues
/// (reclaim, fair sharing: 1), then the preemptor's own queue (2).
#[inline(always)]
pub const fn class(kind: CandidateKind) -> u8 {
    match kind {
        CandidateKind::HierarchicalReclaim => 0,
        CandidateKind::ReclaimWithoutBorrowing
        | CandidateKind::ReclaimWhileBorrowing
        | CandidateKind::FairSharing => 1,
        CandidateKind::SameQueue => 2,
    }
}

/// Candidate `i`'s group in Kueue's victim order (0 to 5): evicted ones of each [`class`]
/// first.
#[inline(always)]
fn group_of<C: Candidates + ?Sized>(t: &C, i: u32) -> u8 {
    u8::from(!t.evicted(i)) * 3 + class(t.kind(i))
}

/// The candidates an order lists.
#[derive(Clone, Copy)]
pub enum Order<'a> {
    /// Every candidate, in index order.
    All,
    /// These (indices into the candidates), in this order.
    Listed(&'a [u32]),
}

/// What the search must know of the candidates of an order before reading usage: which of
/// Kueue's six groups (evicted or not × [`class`]) have candidates, and whether the order
/// lists the groups in turn already (as the candidate order usually does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Bit `g` set when group `g` has a candidate.
    present: u8,
    /// Whether the order tallied lists the groups in turn.
    in_groups: bool,
}

/// Tallies the candidates of `order` (one pass keeping two integers; an index outside the
/// table is skipped).
#[inline(never)]
pub fn tally<C: Candidates + ?Sized>(t: &C, order: Order<'_>) -> Tally {
    // Bit `g` of `seen` is set once group `g` has a candidate; `behind` gets a bit whenever a
    // candidate's group comes after a greater one (so the order is not in groups).
    let (mut seen, mut behind) = (0u32, 0u32);
    let mut note = |group: u8| {
        behind |= seen >> (group + 1);
        seen |= 1 << group;
    };
    match order {
        Order::All => (0..t.len() as u32).for_each(|i| note(group_of(t, i))),
        Order::Listed(order) => {
            for &i in order {
                if (i as usize) < t.len() {
                    note(group_of(t, i));
                }
            }
        }
    }
    Tally {
        present: seen as u8,
        in_groups: behind == 0,
    }
}

impl Tally {
    /// Which [`class`]es have candidates, evicted or not.
    pub fn classes(&self) -> [bool; 3] {
        [0, 1, 2].map(|c| self.present & (1 << c | 1 << (c + 3)) != 0)
    }

    /// Whether the tallied order lists the groups in turn.
    pub fn in_groups(&self) -> bool {
        self.in_groups
    }

    /// The tallied `order` stably partitioned into the six groups, counted rather than sorted
    /// (group `g` starts where the groups before it end); as it is when already in groups. A
    /// candidate outside the table reads as group 0.
    pub fn grouped<C: Candidates + ?Sized>(&self, t: &C, order: Vec<u32>) -> Vec<u32> {
        if self.in_groups {
            return order;
        }
        let groups: Vec<u8> = order
            .iter()
            .map(|&i| {
                if (i as usize) < t.len() {
                    group_of(t, i)
                } else {
                    0
                }
            })
            .collect();
        let mut start = [0usize; 7];
        for &g in &groups {
            start[usize::from(g) + 1] += 1;
        }
        for g in 1..start.len() {
            start[g] += start[g - 1];
        }
        let mut out = vec![0; order.len()];
        for (&i, &g) in order.iter().zip(&groups) {
            let at = &mut start[usize::from(g)];
            out[*at] = i;
            *at += 1;
        }
        out
    }
}

/// The order in which Kueue tries the candidates listed in `subset`: evicted ones of each
/// class first, then the rest of each class, each class in
/// [`candidate_order`](crate::candidates::candidate_order).
pub fn victim_order<C: Candidates + ?Sized>(t: &C, subset: &[u32], own: u32) -> Vec<u32> {
    let order = crate::candidates::candidate_order(t, subset, own);
    tally(t, Order::Listed(&order)).grouped(t, order)
}

/// The borrowing modes Kueue tries, in order (`true`: the preemptor may borrow once the
/// victims are gone), given which [`class`]es the candidates have, whether the preemptor's
/// ClusterQueue forbids borrowing within the cohort (`borrowWithinCohort.policy: Never`, the
/// default) and whether it is under its nominal quota on every resource that needs
/// preemption. One of three constant lists.
pub fn borrowing_attempts(
    classes: [bool; 3],
    borrowing_forbidden: bool,
    under_nominal: bool,
) -> &'static [bool] {
    let no_hierarchical = !classes[0];
    let no_other = !classes[0] && !classes[1];
    if no_other || (borrowing_forbidden && !under_nominal) {
        &[true]
    } else if borrowing_forbidden && no_hierarchical {
        &[false, true]
    } else {
        &[true, false]
    }
}

/// Whether Kueue's `candidateIsValid` turns candidate `i` down without reading usage: a
/// reclaim-without-borrowing candidate of another ClusterQueue while the preemptor (of
/// ClusterQueue `own`) may borrow.
#[inline(always)]
pub fn turned_down_without_usage<C: Candidates + ?Sized>(
    t: &C,
    i: u32,
    own: u32,
    allow_borrowing: bool,
) -> bool {
    allow_borrowing
        && t.kind(i) == CandidateKind::ReclaimWithoutBorrowing
        && t.cluster_queue(i) != own
}

/// Kueue's `candidateIsValid` for a candidate [`turned_down_without_usage`] did not turn
/// down: candidates of the preemptor's own ClusterQueue always are; others only while their
/// queue, and every cohort up to (excluding) their lowest common ancestor with the preemptor,
/// are over their quota on the resources that need preemption (`within_nominal` says whether
/// a node is within it at the current state of the snapshot).
#[inline(always)]
pub fn valid_past_kind<T: Tree + ?Sized, C: Candidates + ?Sized>(
    tree: &T,
    t: &C,
    i: u32,
    own: u32,
    within_nominal: impl Fn(NodeId) -> bool,
) -> bool {
    let cq = t.cluster_queue(i);
    if cq == own {
        return true;
    }
    let Some(node) = tree.cluster_queue_node(cq) else {
        return false;
    };
    if within_nominal(node) {
        return false;
    }
    let lca = t.lca(i);
    let mut ancestors = tree.ancestors(node);
    // The parent before any loop: it is usually the lowest common ancestor (and each loop a
    // guest enters costs it an epoch check).
    let parent = ancestors.next();
    if parent.is_none() || parent == lca {
        return true;
    }
    for ancestor in parent.into_iter().chain(ancestors) {
        if Some(ancestor) == lca {
            break;
        }
        if within_nominal(ancestor) {
            return false;
        }
    }
    true
}

/// Kueue's `candidateIsValid` for candidate `i` ([`turned_down_without_usage`], then
/// [`valid_past_kind`]).
pub fn candidate_is_valid<T: Tree + ?Sized, C: Candidates + ?Sized>(
    tree: &T,
    t: &C,
    i: u32,
    own: u32,
    allow_borrowing: bool,
    within_nominal: impl Fn(NodeId) -> bool,
) -> bool {
    !turned_down_without_usage(t, i, own, allow_borrowing)
        && valid_past_kind(tree, t, i, own, within_nominal)
}

/// The quota snapshot a greedy search simulates on.
pub trait Removal {
    /// What taking a candidate out changed (enough to put it back and take it out again).
    type Taken;
    /// Kueue's `candidateIsValid` for candidate `i` at the current state.
    fn is_valid(&mut self, i: u32, allow_borrowing: bool) -> bool;
    /// Takes candidate `i`'s quota out of the snapshot.
    fn take_out(&mut self, i: u32) -> Self::Taken;
    /// Puts back what [`Removal::take_out`] took.
    fn put_back(&mut self, taken: &Self::Taken);
    /// Takes it out again after [`Removal::put_back`].
    fn take_out_again(&mut self, taken: &Self::Taken);
    /// Kueue's `workloadFits` at the current state: the preemptor's requests within what its
    /// ClusterQueue has available (and without borrowing unless `allow_borrowing`), and its
    /// topology-aware podSets placeable once `victims` but the one at position `but` are gone.
    fn fits(&self, allow_borrowing: bool, victims: &[u32], but: Option<usize>) -> bool;
}

/// The victims a search chose, and whether the preemptor may borrow once they are gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Victims {
    pub victims: Vec<u32>,
    pub allow_borrowing: bool,
}

/// Kueue's greedy search: for each borrowing mode of `attempts`, remove the still-valid
/// candidates of `order` one by one until the preemptor fits, then put back every victim but
/// the last, in reverse, keeping out only those still needed. The snapshot is left as it came.
pub fn remove_until_fit<R: Removal>(
    r: &mut R,
    order: &[u32],
    attempts: &[bool],
) -> Option<Victims> {
    let mut targets: Vec<u32> = Vec::new();
    let mut taken: Vec<R::Taken> = Vec::new();
    for &allow in attempts {
        // Back to the snapshot as it came: the attempt before found no fit.
        put_back_all(r, &mut taken);
        targets.clear();
        for &i in order {
            if !r.is_valid(i, allow) {
                continue;
            }
            if targets.is_empty() {
                // Once, to their largest size: a search often takes out a hundred candidates
                // or more, and growing one by one reallocates at every doubling.
                targets.reserve(order.len());
                taken.reserve(order.len());
            }
            taken.push(r.take_out(i));
            targets.push(i);
            if r.fits(allow, &targets, None) {
                let mut k = targets.len().saturating_sub(1);
                while k > 0 {
                    k -= 1;
                    r.put_back(&taken[k]);
                    if r.fits(allow, &targets, Some(k)) {
                        targets.swap_remove(k);
                        taken.swap_remove(k);
                    } else {
                        r.take_out_again(&taken[k]);
                    }
                }
                put_back_all(r, &mut taken);
                return Some(Victims {
                    victims: targets,
                    allow_borrowing: allow,
                });
            }
        }
    }
    put_back_all(r, &mut taken);
    None
}

/// Puts back every candidate still taken out, the last first.
fn put_back_all<R: Removal>(r: &mut R, taken: &mut Vec<R::Taken>) {
    while let Some(t) = taken.pop() {
        r.put_back(&t);
    }
}

/// Kueue's classical victim selection among the candidates listed in `subset`, for a
/// preemptor of ClusterQueue `own`: the order ([`victim_order`]), the borrowing attempts its
/// classes call for (`attempts`, usually [`borrowing_attempts`] with the preemptor's
/// settings), then [`remove_until_fit`].
pub fn select_victims<C: Candidates + ?Sized, R: Removal>(
    t: &C,
    subset: &[u32],
    own: u32,
    attempts: impl FnOnce([bool; 3]) -> &'static [bool],
    r: &mut R,
) -> Option<Victims> {
    let order = crate::candidates::candidate_order(t, subset, own);
    let tally = tally(t, Order::Listed(&order));
    let attempts = attempts(tally.classes());
    let order = tally.grouped(t, order);
    remove_until_fit(r, &order, attempts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Cand, Sim, Table, TestTree, numbers};

    fn cand(
        w: u32,
        cq: u32,
        kind: CandidateKind,
        priority: i64,
        admitted: i64,
        amount: i64,
    ) -> Cand {
        Cand {
            kind,
            priority,
            admitted,
            usage: vec![(0, amount)],
            ..Cand::new(w, cq)
        }
    }

    /// The counted partition is the stable sort by group, grouped input or not.
    #[test]
    fn grouped_is_a_stable_sort_by_group() {
        let kinds = [
            CandidateKind::SameQueue,
            CandidateKind::HierarchicalReclaim,
            CandidateKind::ReclaimWithoutBorrowing,
            CandidateKind::FairSharing,
        ];
        let mut next = numbers(11);
        for len in [0u32, 1, 2, 7, 50, 300] {
            let t = Table::of(
                (0..len)
                    .map(|w| Cand {
                        kind: kinds[next(4) as usize],
                        evicted: next(4) == 0,
                        ..Cand::new(w, 0)
                    })
                    .collect(),
            );
            let mut order: Vec<u32> = (0..len).collect();
            let shuffle: Vec<u64> = (0..len).map(|_| next(1000)).collect();
            order.sort_by_key(|&i| shuffle[i as usize]);
            let mut expected = order.clone();
            expected.sort_by_key(|&i| group_of(&t, i));
            let found = tally(&t, Order::Listed(&order));
            assert_eq!(found.in_groups(), order == expected);
            assert_eq!(found.grouped(&t, order.clone()), expected);
            assert_eq!(
                tally(&t, Order::Listed(&expected)).grouped(&t, expected.clone()),
                expected
            );
            let all: Vec<u32> = (0..len).collect();
            assert_eq!(tally(&t, Order::All), tally(&t, Order::Listed(&all)));
        }
    }

    #[test]
    fn attempts_follow_borrow_within_cohort() {
        // Only the preemptor's own queue: one attempt, borrowing allowed.
        assert_eq!(
            borrowing_attempts([false, false, true], true, true),
            &[true]
        );
        // Borrowing forbidden and over nominal: only with borrowing (it cannot fit without).
        assert_eq!(
            borrowing_attempts([true, true, false], true, false),
            &[true]
        );
        // Forbidden, under nominal, no hierarchical reclaim: without borrowing first.
        assert_eq!(
            borrowing_attempts([false, true, false], true, true),
            &[false, true]
        );
        assert_eq!(
            borrowing_attempts([true, true, false], false, true),
            &[true, false]
        );
    }

    /// One ClusterQueue (node 0, id 0) with nominal 10.
    fn single() -> TestTree {
        TestTree::new(&[(None, Some(0), 10)])
    }

    #[test]
    fn same_queue_takes_lowest_priority_then_newest_and_puts_back_the_unneeded() {
        let tree = single();
        let t = Table::of(vec![
            cand(1, 0, CandidateKind::SameQueue, 1, 10, 4),
            cand(2, 0, CandidateKind::SameQueue, 0, 5, 3),
            cand(3, 0, CandidateKind::SameQueue, 0, 7, 3),
        ]);
        let mut sim = Sim::new(&tree, &t, 0, &[(0, 10)], 3);
        let v = select_victims(
            &t,
            &[0, 1, 2],
            0,
            |c| borrowing_attempts(c, true, false),
            &mut sim,
        );
        // 3 (priority 0, admitted later) goes first and is enough.
        assert_eq!(
            v,
            Some(Victims {
                victims: vec![2],
                allow_borrowing: true
            })
        );
        assert_eq!(sim.usage, vec![10], "the snapshot is left as it came");
        // Needing 7: 3, then 2 (3 + 3 < 7), then 1; fill-back puts 2 back (4 + 3 = 7).
        let mut sim = Sim::new(&tree, &t, 0, &[(0, 10)], 7);
        let v = select_victims(
            &t,
            &[0, 1, 2],
            0,
            |c| borrowing_attempts(c, true, false),
            &mut sim,
        );
        assert_eq!(v.unwrap().victims, vec![2, 0]);
        // Nothing makes room for 11.
        let mut sim = Sim::new(&tree, &t, 0, &[(0, 10)], 11);
        assert_eq!(remove_until_fit(&mut sim, &[0, 1, 2], &[true]), None);
        assert_eq!(sim.usage, vec![10]);
    }

    /// cohort (node 2) <- a (node 0, cq 0) nominal 5, b (node 1, cq 1) nominal 5; b uses 8 (3
    /// borrowed) in four reclaim-without-borrowing candidates of 2; a uses 2, needs 3.
    #[test]
    fn reclaim_stops_once_the_lender_is_back_within_nominal() {
        let tree = TestTree::new(&[
            (Some(2), Some(0), 5),
            (Some(2), Some(1), 5),
            (None, None, 0),
        ]);
        let mk = |w, admitted| Cand {
            lca: Some(2),
            ..cand(w, 1, CandidateKind::ReclaimWithoutBorrowing, 0, admitted, 2)
        };
        let t = Table::of(vec![mk(1, 1), mk(2, 2), mk(3, 3), mk(4, 4)]);
        let order = victim_order(&t, &[0, 1, 2, 3], 0);
        // While the preemptor may borrow they are turned down; without borrowing, newest
        // first: 4, then 3 → b at 4 ≤ 5, a has 5 − 2 = 3.
        let mut sim = Sim::new(&tree, &t, 0, &[(0, 2), (1, 8), (2, 10)], 3);
        assert_eq!(remove_until_fit(&mut sim, &order, &[true]), None);
        let v = remove_until_fit(&mut sim, &order, &[true, false]).unwrap();
        assert_eq!((v.victims, v.allow_borrowing), (vec![3, 2], false));
        // A lender within nominal is no valid target.
        let mut sim = Sim::new(&tree, &t, 0, &[(0, 2), (1, 4), (2, 6)], 7);
        assert_eq!(remove_until_fit(&mut sim, &order, &[true, false]), None);
    }
}
