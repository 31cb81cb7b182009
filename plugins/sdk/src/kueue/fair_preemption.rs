//! Kueue's fair-sharing victim selection (`fairPreemptions` in
//! `pkg/scheduler/preemption/preemption.go`, with `preemption/fairsharing/*`), exactly as the
//! host's built-in (`src/policy/builtin/fair_preemption.rs`).
//!
//! The candidates are sorted by [`candidate_order`](super::candidate_order) and grouped
//! per ClusterQueue; the preemptor's requests are added to a copy of the request's `tree-usage`
//! (a [`QuotaView`] over every flavor-resource) so that shares include it. A target ordering
//! then repeatedly descends from the root of the cohort tree to the child with the highest
//! dominant resource share (cohorts win ties, ClusterQueues tie on their first candidate; nodes
//! that no longer borrow or have no candidates are pruned) and yields a ClusterQueue:
//! - the preemptor's own queue: its next candidate is preempted unconditionally;
//! - a queue whose candidates are `hierarchical-reclaim` (the preemptor stays within nominal
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

use super::{compare_candidates, preemptor_fits};
use crate::catalog::Catalog;
use crate::fair::{self, Drs};
use crate::preemption::{CandidateKind, CandidateTable, Request, Victims};
use crate::quota::QuotaView;
use crate::types::{FairSharingStrategy, NodeId};

/// Kueue's default `fairSharing.preemptionStrategies`.
const DEFAULT_STRATEGIES: [FairSharingStrategy; 2] = [
    FairSharingStrategy::LessThanOrEqualToFinalShare,
    FairSharingStrategy::LessThanInitialShare,
];

/// Kueue's `fairPreemptions`: the victims for `req` under fair sharing with `strategies` (the
/// catalog's `fair-sharing.strategies`; Kueue's default S2-a then S2-b when empty), or `None`
/// when the strategies cannot make the preemptor fit. Victims always allow borrowing.
///
/// Reads the request's `tree-usage`: the plugin must need [`Needs::TREE_USAGE`]
/// ([`preemption_needs`](super::preemption_needs) does under fair sharing).
///
/// [`Needs::TREE_USAGE`]: crate::types::Needs::TREE_USAGE
pub fn fair_select_victims<C: CandidateTable>(
    catalog: &Catalog,
    req: &Request<C>,
    strategies: &[FairSharingStrategy],
) -> Option<Victims> {
    if req.candidates.is_empty() {
        return None;
    }
    let strategies = if strategies.is_empty() {
        &DEFAULT_STRATEGIES[..]
    } else {
        strategies
    };
    let node = catalog.cluster_queue_node(req.preemptor.cluster_queue)?;
    let all: Vec<u32> = (0..req.candidates.len() as u32).collect();
    let order = super::candidate_order(req, &all);

    let mut sim = Simulation {
        catalog,
        req,
        node,
        view: QuotaView::from_usage_table(catalog, &req.tree_usage),
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
        return None;
    }
    sim.fill_back();
    Some(Victims {
        victims: sim.targets,
        allow_borrowing: true,
    })
}

/// The snapshot being simulated on and the victims chosen so far.
struct Simulation<'c, 'r, C> {
    catalog: &'c Catalog,
    req: &'r Request<C>,
    /// The preemptor's ClusterQueue node.
    node: NodeId,
    view: QuotaView<'c>,
    targets: Vec<u32>,
}

impl<C: CandidateTable> Simulation<'_, '_, C> {
    /// Adds (`sign` 1) or removes (−1) the preemptor's requests at its ClusterQueue.
    fn incoming(&mut self, sign: i64) {
        for r in &self.req.requests {
            self.view.add_usage(self.node, r.fr, sign * r.amount);
        }
    }

    /// Removes a victim from the snapshot and records it.
    fn preempt(&mut self, i: u32) {
        self.view
            .remove_candidate_of(&self.req.candidates, i as usize);
        self.targets.push(i);
    }

    /// Kueue's `workloadFitsForFairSharing`: `workloadFits` with borrowing allowed, on the
    /// snapshot without the preemptor's own (simulated) usage.
    fn fits(&mut self) -> bool {
        self.incoming(-1);
        let fits = preemptor_fits(&self.view, self.req, self.node, true);
        self.incoming(1);
        fits
    }

    /// A node's dominant resource share on the current snapshot.
    fn share(&self, node: NodeId) -> Drs {
        self.view.drs_of(node, &[])
    }

    /// Kueue's `runFirstFsStrategy`: whether the preemptor fits, and the candidates the
    /// strategy refused (for rule S2-b).
    fn first_strategy(&mut self, order: &[u32], strategy: FairSharingStrategy) -> (bool, Vec<u32>) {
        let req = self.req;
        let mut ordering = TargetOrdering::new(self.catalog, req, self.node, order);
        let mut retry = Vec::new();
        while let Some(target) = ordering.next(&self.view) {
            // The preemptor's own queue (InClusterQueue), or a reclaim while the preemptor
            // stays within nominal quota (InCohortReclamation): no strategy applies.
            let unconditional = target == self.node
                || ordering.head(target).is_some_and(|i| {
                    req.candidates.kind(i as usize) == CandidateKind::HierarchicalReclaim
                });
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
            let preemptor_new = self.share(lca_preemptor);
            let target_old = self.share(lca_target);
            if unsatisfiable(&preemptor_new, &target_old) {
                // No candidate of this queue can pass; keep them for rule S2-b.
                while let Some(i) = ordering.pop(target) {
                    retry.push(i);
                }
                continue;
            }
            while let Some(i) = ordering.pop(target) {
                // Kueue's `ComputeTargetShareAfterRemoval`.
                self.view.remove_candidate_of(&req.candidates, i as usize);
                let target_new = self.share(lca_target);
                self.view.restore_candidate_of(&req.candidates, i as usize);
                let passed = match strategy {
                    FairSharingStrategy::LessThanOrEqualToFinalShare => {
                        fair::compare(&preemptor_new, &target_new) != Ordering::Greater
                    }
                    FairSharingStrategy::LessThanInitialShare => {
                        fair::compare(&preemptor_new, &target_old) == Ordering::Less
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
        let mut ordering = TargetOrdering::new(self.catalog, self.req, self.node, retry);
        while let Some(target) = ordering.next(&self.view) {
            let (lca_preemptor, lca_target) = ordering.almost_lcas(target);
            let passed = fair::compare(&self.share(lca_preemptor), &self.share(lca_target))
                == Ordering::Less;
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
            let victim = self.targets[k] as usize;
            self.view.restore_candidate_of(&self.req.candidates, victim);
            if preemptor_fits(&self.view, self.req, self.node, true) {
                self.targets.swap_remove(k);
            } else {
                self.view.remove_candidate_of(&self.req.candidates, victim);
            }
        }
    }
}

/// Kueue's `fsStrategyUnsatisfiable`: an infinite preemptor share (zero weight, borrowing)
/// against a finite target share fails both strategies for every candidate.
fn unsatisfiable(preemptor_new: &Drs, target_old: &Drs) -> bool {
    preemptor_new.weighted() == f64::INFINITY && target_old.weighted() != f64::INFINITY
}

/// `a` against `b`, where `None` is Kueue's `NegativeDRS` (below every share).
fn compare_opt(a: Option<&Drs>, b: Option<&Drs>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => fair::compare(a, b),
        (a, b) => a.is_some().cmp(&b.is_some()),
    }
}

/// Kueue's `TargetClusterQueueOrdering`: which ClusterQueue to take the next victim from.
struct TargetOrdering<'c, 'r, C> {
    catalog: &'c Catalog,
    req: &'r Request<C>,
    /// The preemptor's ClusterQueue node.
    own: NodeId,
    /// Per node: the cohorts on the path from the preemptor's ClusterQueue to the root.
    on_path: Vec<bool>,
    /// Per ClusterQueue node: its candidates, in candidate order.
    queues: Vec<VecDeque<u32>>,
    /// Per node: will yield no more targets.
    pruned: Vec<bool>,
}

impl<'c, 'r, C: CandidateTable> TargetOrdering<'c, 'r, C> {
    fn new(catalog: &'c Catalog, req: &'r Request<C>, own: NodeId, candidates: &[u32]) -> Self {
        let n = catalog.nodes.len();
        let mut on_path = vec![false; n];
        for a in catalog.ancestors(own) {
            // A parent outside the node list (a malformed catalog) is on no path.
            if let Some(on) = on_path.get_mut(a as usize) {
                *on = true;
            }
        }
        let mut queues = vec![VecDeque::new(); n];
        for &i in candidates {
            let cq = req.candidates.cluster_queue(i as usize);
            if let Some(queue) = catalog
                .cluster_queue_node(cq)
                .and_then(|node| queues.get_mut(node as usize))
            {
                queue.push_back(i);
            }
        }
        TargetOrdering {
            catalog,
            req,
            own,
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
    fn next(&mut self, view: &QuotaView<'_>) -> Option<NodeId> {
        let own = self.own;
        let Some(parent) = self.catalog.parent(own) else {
            return (!self.pruned[own as usize] && self.has_workload(own)).then_some(own);
        };
        let root = self.catalog.root(parent);
        while !self.pruned[root as usize] {
            if let Some(cq) = self.next_target(root, view) {
                return Some(cq);
            }
        }
        None
    }

    /// Kueue's `nextTarget`: the child with the highest share, entering cohorts; `None` when
    /// this call only pruned nodes.
    fn next_target(&mut self, cohort: NodeId, view: &QuotaView<'_>) -> Option<NodeId> {
        let catalog = self.catalog;
        let children = catalog.children(cohort);

        let mut best_cq: Option<(NodeId, Drs)> = None;
        for &cq in children {
            if !catalog.is_cluster_queue_node(cq) || self.pruned[cq as usize] {
                continue;
            }
            let drs = view.drs_of(cq, &[]);
            // The preemptor's own queue stays until it runs out of candidates.
            if (!drs.is_borrowing() && cq != self.own) || !self.has_workload(cq) {
                self.pruned[cq as usize] = true;
                continue;
            }
            match &best_cq {
                None => best_cq = Some((cq, drs)),
                Some((best, best_drs)) => match fair::compare(&drs, best_drs) {
                    Ordering::Greater => best_cq = Some((cq, drs)),
                    Ordering::Equal => {
                        // Tie: the queue whose first candidate comes first; the share kept
                        // for later comparisons stays the earlier one, as in Kueue.
                        let (new, current) = (self.head(cq), self.head(*best));
                        if let (Some(new), Some(current)) = (new, current)
                            && compare_candidates(
                                &self.req.candidates,
                                new as usize,
                                current as usize,
                                self.req.preemptor.cluster_queue,
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
        for &child in children {
            if catalog.node(child).is_none()
                || catalog.is_cluster_queue_node(child)
                || self.pruned[child as usize]
            {
                continue;
            }
            let drs = view.drs_of(child, &[]);
            // A cohort on the preemptor's path stays until all its children are pruned.
            if !drs.is_borrowing() && !self.on_path.get(child as usize).copied().unwrap_or(false) {
                self.pruned[child as usize] = true;
            } else if compare_opt(Some(&drs), best_cohort.as_ref().map(|b| &b.1)) != Ordering::Less
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
                if compare_opt(Some(&c_drs), best_cq.as_ref().map(|b| &b.1)) != Ordering::Less =>
            {
                self.next_target(c, view)
            }
            (_, best_cq) => best_cq.map(|(cq, _)| cq),
        }
    }

    /// Kueue's `getAlmostLCAs`: the preemptor's and the target's ancestors (or themselves)
    /// just below their least common ancestor.
    fn almost_lcas(&self, target: NodeId) -> (NodeId, NodeId) {
        let catalog = self.catalog;
        let Some(lca) = catalog
            .ancestors(target)
            .find(|&a| self.on_path.get(a as usize).copied().unwrap_or(false))
        else {
            // Only the preemptor's own queue has no common cohort with it.
            return (self.own, target);
        };
        let below = |node: NodeId| {
            let mut below = node;
            for a in catalog.ancestors(node) {
                if a == lca {
                    break;
                }
                below = a;
            }
            below
        };
        (below(self.own), below(target))
    }
}

#[cfg(test)]
mod tests {
    //! The host's unit tests of `fair_preemption.rs`, on the same clusters: one cohort "all"
    //! (node 0) of ClusterQueues a, b, c, d (nodes 1–4, ids 0–3) with 4 cpu nominal each; the
    //! preemptor is in a.

    use super::*;
    use crate::catalog::Catalog;
    use crate::preemption::Candidate;
    use crate::testing::{CatalogBuilder, amounts, usage_table, workload};
    use crate::types::{ClusterQueueId, NodeUsage, Quantity};

    use FairSharingStrategy::{LessThanInitialShare as S2B, LessThanOrEqualToFinalShare as S2A};

    /// An admitted workload: name, ClusterQueue id, cpu, admission second (later = newer).
    type Admitted<'a> = (&'a str, ClusterQueueId, Quantity, i64);

    /// One cohort with a ClusterQueue per weight (`None`: the default 1), 4 cpu nominal each.
    fn catalog(weights: &[Option<Quantity>]) -> Catalog {
        let mut b = CatalogBuilder::new()
            .flavor_resources(1)
            .cohort("all", None);
        for (i, _) in weights.iter().enumerate() {
            let name = ["a", "b", "c", "d"][i];
            b = b
                .cluster_queue(name, Some(0))
                .quota(i as NodeId + 1, 0, 4000, None, None);
        }
        let mut raw = b.build().raw().clone();
        for (i, w) in weights.iter().enumerate() {
            if let Some(w) = w {
                raw.nodes[i + 1].fair_weight = *w;
            }
        }
        Catalog::new(raw)
    }

    fn four() -> Catalog {
        catalog(&[None; 4])
    }

    /// A ClusterQueue without a cohort (node 0, id 0), 4 cpu nominal.
    fn alone() -> Catalog {
        CatalogBuilder::new()
            .flavor_resources(1)
            .cluster_queue("a", None)
            .quota(0, 0, 4000, None, None)
            .build()
    }

    /// The tree usage of the admitted workloads.
    fn tree_usage(cat: &Catalog, admitted: &[Admitted<'_>]) -> Vec<NodeUsage> {
        let adds: Vec<(NodeId, u32, Quantity)> = admitted
            .iter()
            .map(|&(_, cq, cpu, _)| (cat.cluster_queue_node(cq).unwrap(), 0, cpu * 1000))
            .collect();
        let root = cat.root(0);
        usage_table(cat, &[root], &adds)
    }

    /// The host's fair-sharing candidates for a preemptor of `cpu` milli-cpu in a (id 0): a's
    /// workloads (unless `own` is false), and those of every other queue that borrows cpu, as
    /// `others`. Candidates are in host order (by ClusterQueue, then workload); workload ids
    /// are the positions in `admitted`.
    fn request(
        cat: &Catalog,
        admitted: &[Admitted<'_>],
        cpu: Quantity,
        own: bool,
        others: CandidateKind,
    ) -> Request {
        let table = tree_usage(cat, admitted);
        let view = QuotaView::from_usage_table(cat, &table);
        let mut candidates = Vec::new();
        for cq in 0..cat.cluster_queues.len() as ClusterQueueId {
            let node = cat.cluster_queue_node(cq).unwrap();
            let kind = if cq == 0 {
                if !own {
                    continue;
                }
                CandidateKind::SameQueue
            } else if view.borrowing(node, 0) {
                others
            } else {
                continue;
            };
            for (w, &(_, wcq, amount, second)) in admitted.iter().enumerate() {
                if wcq != cq {
                    continue;
                }
                candidates.push(Candidate {
                    workload: w as u32,
                    cluster_queue: cq,
                    kind,
                    lca: None,
                    priority: 0,
                    created: 0,
                    admitted: second * 1000,
                    requeue_count: 0,
                    requeue_reason: None,
                    evicting: false,
                    usage: amounts(&[(0, amount * 1000)]),
                    annotations: Vec::new(),
                    local_queue: None,
                    namespace: crate::identity::NO_STRING,
                    owner: None,
                    labels: Vec::new(),
                    local_queue_usage: None,
                });
            }
        }
        Request {
            preemptor: workload(1000, 0, 0, 0),
            requests: amounts(&[(0, cpu)]),
            needs_preemption: vec![0],
            candidates,
            usage_kept: false,
            usage: Vec::new(),
            tree_usage: table,
            now: 0,
        }
    }

    /// Other queues' candidates only (as if `withinClusterQueue` allowed none of a's).
    fn fair_request(cat: &Catalog, admitted: &[Admitted<'_>], cpu: Quantity) -> Request {
        request(cat, admitted, cpu, false, CandidateKind::FairSharing)
    }

    /// The victims' names, sorted.
    fn victims(
        cat: &Catalog,
        req: &Request,
        admitted: &[Admitted<'_>],
        strategies: &[FairSharingStrategy],
    ) -> Option<Vec<String>> {
        let v = fair_select_victims(cat, req, strategies);
        // The same decision on the candidates as the host sends them.
        assert_eq!(
            fair_select_victims(cat, &req.to_columns(), strategies),
            v,
            "as sent"
        );
        let v = v?;
        assert!(v.allow_borrowing);
        let mut names: Vec<String> = v
            .victims
            .iter()
            .map(|&i| {
                admitted[req.candidates[i as usize].workload as usize]
                    .0
                    .to_string()
            })
            .collect();
        names.sort();
        Some(names)
    }

    fn names(prefix: &str, n: usize) -> Vec<String> {
        (1..=n).map(|k| format!("{prefix}{k}")).collect()
    }

    /// n admitted 1-cpu workloads `{prefix}1..` in `cq`, admitted at `second`, `second`+1, ...
    fn ones(names: &[String], cq: ClusterQueueId, second: i64) -> Vec<Admitted<'_>> {
        names
            .iter()
            .enumerate()
            .map(|(k, n)| (n.as_str(), cq, 1, second + k as i64))
            .collect()
    }

    #[test]
    fn s2a_takes_from_the_highest_share_until_the_preemptor_fits() {
        // 16 cpu, all used: a 3, b 7 (borrows 3: 187.5), c 6 (borrows 2: 125). Incoming 2 cpu
        // makes a borrow 1 (62.5). b loses one (→ 125), then b and c tie and c's first
        // candidate (newer) wins the tie (→ 62.5 ≤ 62.5 passes).
        let cat = four();
        let (a, b, c) = (names("a", 3), names("b", 7), names("c", 6));
        let mut adm = ones(&a, 0, 0);
        adm.extend(ones(&b, 1, 10));
        adm.extend(ones(&c, 2, 30));
        let req = fair_request(&cat, &adm, 2000);
        let want = Some(vec!["b7".to_string(), "c6".to_string()]);
        assert_eq!(victims(&cat, &req, &adm, &[S2A]), want);
        assert_eq!(victims(&cat, &req, &adm, &[S2A, S2B]), want);
    }

    #[test]
    fn s2a_refuses_a_final_share_below_the_preemptor_where_s2b_accepts() {
        // a 4, b 6 in three 2-cpu workloads (borrows 2: 125), c 4. Incoming 1 cpu makes a
        // borrow 1 (62.5). Losing 2 cpu leaves b at 0 < 62.5: S2-a refuses every one; S2-b
        // compares with b's initial 125 and takes the first.
        let cat = four();
        let adm = [
            ("a1", 0, 4, 0),
            ("b1", 1, 2, 1),
            ("b2", 1, 2, 2),
            ("b3", 1, 2, 3),
            ("c1", 2, 4, 4),
        ];
        let req = fair_request(&cat, &adm, 1000);
        assert_eq!(victims(&cat, &req, &adm, &[S2A]), None);
        assert_eq!(
            victims(&cat, &req, &adm, &[S2A, S2B]),
            Some(vec!["b3".into()])
        );
        assert_eq!(victims(&cat, &req, &adm, &[S2B]), Some(vec!["b3".into()]));
        // No strategies: Kueue's default, S2-a then S2-b.
        assert_eq!(victims(&cat, &req, &adm, &[]), Some(vec!["b3".into()]));
    }

    #[test]
    fn a_zero_weight_borrower_is_always_the_target() {
        // b has weight 0 (borrows 2: infinite share), c borrows 3 (187.5, newer workloads).
        // b is targeted until its last borrowed cpu would bring it below a; then c gives one.
        let cat = catalog(&[None, Some(0), None, None]);
        let (a, b, c) = (names("a", 3), names("b", 6), names("c", 7));
        let mut adm = ones(&a, 0, 0);
        adm.extend(ones(&b, 1, 10));
        adm.extend(ones(&c, 2, 30));
        let req = fair_request(&cat, &adm, 2000);
        assert_eq!(
            victims(&cat, &req, &adm, &[S2A]),
            Some(vec!["b6".into(), "c7".into()])
        );
        let req = fair_request(&cat, &adm, 1000);
        assert_eq!(victims(&cat, &req, &adm, &[S2A]), Some(vec!["b6".into()]));
    }

    #[test]
    fn a_zero_weight_preemptor_cannot_preempt_a_finite_share() {
        let cat = catalog(&[Some(0), None, None, None]);
        let adm = [("a1", 0, 4, 0), ("b1", 1, 8, 1), ("c1", 2, 4, 2)];
        let req = fair_request(&cat, &adm, 1000);
        assert_eq!(victims(&cat, &req, &adm, &[S2A, S2B]), None);
    }

    #[test]
    fn own_queue_candidates_go_first_when_the_own_queue_leads() {
        // a 6 (with the incoming 1 cpu borrows 3: 187.5), b 5 (borrows 1: 62.5, newer), c 4,
        // d 1: a's own newest workload goes, although b's come first in candidate order.
        let cat = four();
        let (a, b) = (names("a", 6), names("b", 5));
        let mut adm = ones(&a, 0, 0);
        adm.extend(ones(&b, 1, 10));
        adm.extend([("c1", 2, 4, 20), ("d1", 3, 1, 21)]);
        let req = request(&cat, &adm, 1000, true, CandidateKind::FairSharing);
        let first = (0..req.candidates.len())
            .min_by(|&x, &y| {
                crate::kueue::candidates_ordering(&req.candidates[x], &req.candidates[y], 0)
            })
            .unwrap();
        assert_ne!(req.candidates[first].cluster_queue, 0);
        assert_eq!(
            victims(&cat, &req, &adm, &[S2A, S2B]),
            Some(vec!["a6".into()])
        );
        let v = fair_select_victims(&cat, &req, &[S2A]).unwrap();
        assert_eq!(
            req.candidates[v.victims[0] as usize].kind,
            CandidateKind::SameQueue
        );
    }

    #[test]
    fn hierarchical_reclaim_candidates_ignore_the_strategies() {
        // The setup S2-a refuses, with the candidates marked as reclaim: taken in target order.
        let cat = four();
        let adm = [
            ("a1", 0, 4, 0),
            ("b1", 1, 2, 1),
            ("b2", 1, 2, 2),
            ("b3", 1, 2, 3),
            ("c1", 2, 4, 4),
        ];
        let req = request(&cat, &adm, 1000, false, CandidateKind::HierarchicalReclaim);
        assert_eq!(victims(&cat, &req, &adm, &[S2A]), Some(vec!["b3".into()]));
    }

    #[test]
    fn without_a_cohort_only_the_own_queue_is_targeted() {
        let cat = alone();
        let a = names("a", 4);
        let adm = ones(&a, 0, 0);
        let req = request(&cat, &adm, 2000, true, CandidateKind::FairSharing);
        assert_eq!(
            victims(&cat, &req, &adm, &[S2A, S2B]),
            Some(vec!["a3".into(), "a4".into()])
        );
    }

    #[test]
    fn no_candidates_or_unknown_queue_is_no_answer() {
        let cat = four();
        let adm = [("a1", 0, 4, 0)];
        let req = fair_request(&cat, &adm, 1000);
        assert!(req.candidates.is_empty());
        assert_eq!(fair_select_victims(&cat, &req, &[S2A]), None);
        let mut req = request(&cat, &adm, 1000, true, CandidateKind::FairSharing);
        req.preemptor.cluster_queue = 99;
        assert_eq!(fair_select_victims(&cat, &req, &[S2A]), None);
    }
}
