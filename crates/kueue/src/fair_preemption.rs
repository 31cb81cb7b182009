//! Kueue's fair-sharing victim selection (`fairPreemptions` in
//! `pkg/scheduler/preemption/preemption.go`, with `preemption/fairsharing/*`).
//!
//! The candidates are sorted by [`candidate_order`] and grouped per ClusterQueue; the
//! preemptor's requests are added to the snapshot so that shares include it. A target ordering
//! then repeatedly descends from the root of the cohort tree to the child with the highest
//! dominant resource share (cohorts win ties, ClusterQueues tie on their first candidate; nodes
//! that no longer borrow or have no candidates are pruned) and yields a ClusterQueue:
//! - the preemptor's own queue: its next candidate is preempted unconditionally;
//! - a queue whose candidates are hierarchical reclaim (the preemptor stays within nominal
//!   quota): likewise;
//! - otherwise the first strategy decides per candidate, comparing the shares of the two
//!   almost-least-common-ancestors (the preemptor side's after admission against the target
//!   side's after the victim leaves, S2-a, or before, S2-b); after one preemption the ordering
//!   is asked again, since the shares changed. Candidates that fail go to a retry list.
//!
//! When the first strategy does not make room, a second (S2-b) pass over the retry list
//! preempts at most the first candidate of each queue and then drops the queue. Each removal
//! is followed by Kueue's fit check (borrowing allowed, the preemptor's own usage taken out);
//! on success, fill-back re-adds victims that turned out not to be needed.

use std::cmp::Ordering;
use std::collections::VecDeque;

use crate::candidates::{self, candidate_order};
use crate::share::{self, Drs, Snapshot};
use crate::{CandidateKind, Candidates, NodeId, Tree};

/// Kueue's `fairSharing.preemptionStrategies`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// S2-a: the preemptor's share after admission at most the target's after the victim
    /// leaves.
    LessThanOrEqualToFinalShare,
    /// S2-b: the preemptor's share after admission below the target's before.
    LessThanInitialShare,
}

/// Kueue's default strategies: S2-a, then S2-b.
pub const DEFAULT_STRATEGIES: [Strategy; 2] = [
    Strategy::LessThanOrEqualToFinalShare,
    Strategy::LessThanInitialShare,
];

/// The quota snapshot the search simulates on ([`Snapshot`]), and the preemptor's fit on it.
pub trait Search: Snapshot {
    /// Kueue's `workloadFitsForFairSharing`: the preemptor fits at the current state with
    /// borrowing allowed (its own usage is out of the snapshot when this is asked), its
    /// topology-aware podSets placeable once `victims` but the one at position `but` are gone.
    fn preemptor_fits(&self, victims: &[u32], but: Option<usize>) -> bool;
}

/// The preemptor: its ClusterQueue's id and node, and its requests as `(flavor-resource,
/// amount)` pairs.
#[derive(Debug, Clone, Copy)]
pub struct Preemptor<'a> {
    pub cluster_queue: u32,
    pub node: NodeId,
    pub requests: &'a [(u32, i64)],
}

/// Kueue's `fairPreemptions`: the victims (indices into `t`) that make the preemptor fit under
/// fair sharing with `strategies` (Kueue's default S2-a then S2-b when empty), or `None`. The
/// preemptor may always borrow once they are gone. The snapshot is left as it came when there
/// is no answer; with an answer, without the victims' usage.
pub fn select_victims<T: Tree + ?Sized, C: Candidates + ?Sized, S: Search>(
    tree: &T,
    t: &C,
    preemptor: Preemptor<'_>,
    snapshot: &mut S,
    strategies: &[Strategy],
) -> Option<Vec<u32>> {
    if t.is_empty() {
        return None;
    }
    let strategies = if strategies.is_empty() {
        &DEFAULT_STRATEGIES[..]
    } else {
        strategies
    };
    let all: Vec<u32> = (0..t.len() as u32).collect();
    let order = candidate_order(t, &all, preemptor.cluster_queue);

    let mut sim = Simulation {
        tree,
        t,
        preemptor,
        snapshot,
        targets: Vec::new(),
    };
    // Shares must include the incoming workload.
    sim.incoming(1);
    let (mut fits, retry) = sim.first_strategy(&order, strategies[0]);
    if !fits && strategies.len() > 1 {
        fits = sim.second_strategy(&retry);
    }
    sim.incoming(-1);
    if !fits {
        for &i in sim.targets.clone().iter().rev() {
            sim.candidate(i, 1);
        }
        return None;
    }
    sim.fill_back();
    Some(sim.targets)
}

/// The snapshot being simulated on and the victims chosen so far.
struct Simulation<'a, T: ?Sized, C: ?Sized, S> {
    tree: &'a T,
    t: &'a C,
    preemptor: Preemptor<'a>,
    snapshot: &'a mut S,
    targets: Vec<u32>,
}

impl<T: Tree + ?Sized, C: Candidates + ?Sized, S: Search> Simulation<'_, T, C, S> {
    /// Adds (`sign` 1) or removes (−1) the preemptor's requests at its ClusterQueue.
    fn incoming(&mut self, sign: i64) {
        for &(fr, v) in self.preemptor.requests {
            self.snapshot.add_usage(self.preemptor.node, fr, sign * v);
        }
    }

    /// Adds (`sign` 1) or removes (−1) a candidate's usage at its ClusterQueue.
    fn candidate(&mut self, i: u32, sign: i64) {
        let Some(node) = self.tree.cluster_queue_node(self.t.cluster_queue(i)) else {
            return;
        };
        for (fr, v) in self.t.usage(i) {
            self.snapshot.add_usage(node, fr, sign * v);
        }
    }

    /// Removes a victim from the snapshot and records it.
    fn preempt(&mut self, i: u32) {
        self.candidate(i, -1);
        self.targets.push(i);
    }

    /// Kueue's `workloadFitsForFairSharing`, on the snapshot without the preemptor's own
    /// (simulated) usage.
    fn fits(&mut self) -> bool {
        self.incoming(-1);
        let fits = self.snapshot.preemptor_fits(&self.targets, None);
        self.incoming(1);
        fits
    }

    /// Kueue's `runFirstFsStrategy`: whether the preemptor fits, and the candidates the
    /// strategy refused (for rule S2-b).
    fn first_strategy(&mut self, order: &[u32], strategy: Strategy) -> (bool, Vec<u32>) {
        let mut ordering = TargetOrdering::new(self.tree, self.t, self.preemptor, order);
        let mut retry = Vec::new();
        while let Some(target) = ordering.next(&*self.snapshot) {
            // The preemptor's own queue (InClusterQueue), or a reclaim while the preemptor
            // stays within nominal quota (InCohortReclamation): no strategy applies.
            let unconditional = target == self.preemptor.node
                || ordering
                    .head(target)
                    .is_some_and(|i| self.t.kind(i) == CandidateKind::HierarchicalReclaim);
            if unconditional {
                let Some(i) = ordering.pop(target) else {
                    continue;
                };
                self.preempt(i);
                if self.fits() {
                    return (true, Vec::new());
                }
                continue;
            }

            let (lca_preemptor, lca_target) = ordering.almost_lcas(target);
            let preemptor_new = self.snapshot.share(lca_preemptor);
            let target_old = self.snapshot.share(lca_target);
            if unsatisfiable(&preemptor_new, &target_old) {
                // No candidate of this queue can pass; keep them for rule S2-b.
                while let Some(i) = ordering.pop(target) {
                    retry.push(i);
                }
                continue;
            }
            while let Some(i) = ordering.pop(target) {
                // Kueue's `ComputeTargetShareAfterRemoval`.
                self.candidate(i, -1);
                let target_new = self.snapshot.share(lca_target);
                self.candidate(i, 1);
                let passed = match strategy {
                    Strategy::LessThanOrEqualToFinalShare => {
                        share::compare(&preemptor_new, &target_new) != Ordering::Greater
                    }
                    Strategy::LessThanInitialShare => {
                        share::compare(&preemptor_new, &target_old) == Ordering::Less
                    }
                };
                if passed {
                    self.preempt(i);
                    if self.fits() {
                        return (true, Vec::new());
                    }
                    // The shares changed: pick the target queue again.
                    break;
                }
                retry.push(i);
            }
        }
        (false, retry)
    }

    /// Kueue's `runSecondFsStrategy` (rule S2-b over the retry candidates): at most the first
    /// candidate of each queue, each queue dropped after one look.
    fn second_strategy(&mut self, retry: &[u32]) -> bool {
        let mut ordering = TargetOrdering::new(self.tree, self.t, self.preemptor, retry);
        while let Some(target) = ordering.next(&*self.snapshot) {
            let (lca_preemptor, lca_target) = ordering.almost_lcas(target);
            let passed = share::compare(
                &self.snapshot.share(lca_preemptor),
                &self.snapshot.share(lca_target),
            ) == Ordering::Less;
            let head = ordering.pop(target);
            if passed && let Some(i) = head {
                self.preempt(i);
                if self.fits() {
                    return true;
                }
            }
            ordering.drop_queue(target);
        }
        false
    }

    /// Kueue's `fillBackWorkloads(…, true)`, on the snapshot without the preemptor: re-add
    /// every victim but the last, in reverse order, keeping out only those still needed.
    fn fill_back(&mut self) {
        let mut k = self.targets.len().saturating_sub(1);
        while k > 0 {
            k -= 1;
            let i = self.targets[k];
            self.candidate(i, 1);
            if self.snapshot.preemptor_fits(&self.targets, Some(k)) {
                self.targets.swap_remove(k);
            } else {
                self.candidate(i, -1);
            }
        }
    }
}

/// Kueue's `fsStrategyUnsatisfiable`: an infinite preemptor share (zero weight, borrowing)
/// against a finite target share fails both strategies for every candidate.
fn unsatisfiable(preemptor_new: &Drs, target_old: &Drs) -> bool {
    preemptor_new.weighted() == f64::INFINITY && target_old.weighted() != f64::INFINITY
}

/// Kueue's `TargetClusterQueueOrdering`: which ClusterQueue to take the next victim from.
struct TargetOrdering<'a, T: ?Sized, C: ?Sized> {
    tree: &'a T,
    t: &'a C,
    preemptor: Preemptor<'a>,
    /// Per node: the cohorts on the path from the preemptor's ClusterQueue to the root.
    on_path: Vec<bool>,
    /// Per ClusterQueue node: its candidates, in candidate order.
    queues: Vec<VecDeque<u32>>,
    /// Per node: will yield no more targets.
    pruned: Vec<bool>,
}

impl<'a, T: Tree + ?Sized, C: Candidates + ?Sized> TargetOrdering<'a, T, C> {
    fn new(tree: &'a T, t: &'a C, preemptor: Preemptor<'a>, candidates: &[u32]) -> Self {
        let n = tree.node_count();
        let mut on_path = vec![false; n];
        for a in tree.ancestors(preemptor.node) {
            on_path[a as usize] = true;
        }
        let mut queues = vec![VecDeque::new(); n];
        for &i in candidates {
            if let Some(node) = tree.cluster_queue_node(t.cluster_queue(i)) {
                queues[node as usize].push_back(i);
            }
        }
        TargetOrdering {
            tree,
            t,
            preemptor,
            on_path,
            queues,
            pruned: vec![false; n],
        }
    }

    fn head(&self, cq: NodeId) -> Option<u32> {
        self.queues[cq as usize].front().copied()
    }

    fn pop(&mut self, cq: NodeId) -> Option<u32> {
        self.queues[cq as usize].pop_front()
    }

    fn has_workload(&self, cq: NodeId) -> bool {
        !self.queues[cq as usize].is_empty()
    }

    /// Kueue's `DropQueue`.
    fn drop_queue(&mut self, cq: NodeId) {
        self.pruned[cq as usize] = true;
    }

    /// Kueue's `Iter`: the next target ClusterQueue on the current snapshot, or `None` when the
    /// whole tree is pruned.
    fn next(&mut self, s: &impl Search) -> Option<NodeId> {
        let own = self.preemptor.node;
        let Some(parent) = self.tree.parent(own) else {
            return (!self.pruned[own as usize] && self.has_workload(own)).then_some(own);
        };
        let root = self.tree.root(parent);
        while !self.pruned[root as usize] {
            if let Some(cq) = self.next_target(root, s) {
                return Some(cq);
            }
        }
        None
    }

    /// Kueue's `nextTarget`: the child with the highest share, entering cohorts; `None` when
    /// this call only pruned nodes.
    fn next_target(&mut self, cohort: NodeId, s: &impl Search) -> Option<NodeId> {
        let tree = self.tree;
        let mut best_cq: Option<(NodeId, Drs)> = None;
        for cq in tree.children(cohort) {
            if !tree.is_cluster_queue(cq) || self.pruned[cq as usize] {
                continue;
            }
            let drs = s.share(cq);
            // The preemptor's own queue stays until it runs out of candidates.
            if (!drs.is_borrowing() && cq != self.preemptor.node) || !self.has_workload(cq) {
                self.pruned[cq as usize] = true;
                continue;
            }
            match &best_cq {
                None => best_cq = Some((cq, drs)),
                Some((best, best_drs)) => match share::compare(&drs, best_drs) {
                    Ordering::Greater => best_cq = Some((cq, drs)),
                    Ordering::Equal => {
                        // Tie: the queue whose first candidate comes first; the share kept
                        // for later comparisons stays the earlier one, as in Kueue.
                        let (new, current) = (self.head(cq), self.head(*best));
                        if let (Some(new), Some(current)) = (new, current)
                            && candidates::compare(
                                self.t,
                                new,
                                self.t,
                                current,
                                self.preemptor.cluster_queue,
                            ) == Ordering::Less
                        {
                            let kept = best_drs.clone();
                            best_cq = Some((cq, kept));
                        }
                    }
                    Ordering::Less => {}
                },
            }
        }

        let mut best_cohort: Option<(NodeId, Drs)> = None;
        for child in tree.children(cohort) {
            if tree.is_cluster_queue(child) || self.pruned[child as usize] {
                continue;
            }
            let drs = s.share(child);
            // A cohort on the preemptor's path stays until all its children are pruned.
            if !drs.is_borrowing() && !self.on_path[child as usize] {
                self.pruned[child as usize] = true;
            } else if share::compare_or_negative(Some(&drs), best_cohort.as_ref().map(|b| &b.1))
                != Ordering::Less
            {
                best_cohort = Some((child, drs));
            }
        }

        match (best_cohort, best_cq) {
            (None, None) => {
                self.pruned[cohort as usize] = true;
                None
            }
            // Cohorts win ties: the most unfair node inside can then be chosen.
            (Some((c, c_drs)), best_cq)
                if share::compare_or_negative(Some(&c_drs), best_cq.as_ref().map(|b| &b.1))
                    != Ordering::Less =>
            {
                self.next_target(c, s)
            }
            (_, best_cq) => best_cq.map(|(cq, _)| cq),
        }
    }

    /// Kueue's `getAlmostLCAs`: the preemptor's and the target's ancestors (or themselves)
    /// just below their least common ancestor.
    fn almost_lcas(&self, target: NodeId) -> (NodeId, NodeId) {
        let tree = self.tree;
        let own = self.preemptor.node;
        let Some(lca) = tree.ancestors(target).find(|&a| self.on_path[a as usize]) else {
            // Only the preemptor's own queue has no common cohort with it.
            return (own, target);
        };
        let below = |node: NodeId| {
            let mut below = node;
            for a in tree.ancestors(node) {
                if a == lca {
                    break;
                }
                below = a;
            }
            below
        };
        (below(own), below(target))
    }
}
