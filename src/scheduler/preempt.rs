//! Preemption on the host side: which admitted workloads are eligible victims under the
//! ClusterQueue's settings (Kueue's candidate classes), the call to the preemption policy, the
//! check of its answer, the ClusterQueue's preemption budget ([`super::budget`]) on the victims
//! chosen, and the oracle flavor assignment uses to ask "could preemption help?".

use std::cell::RefCell;

use crate::api::{BorrowWithinCohortPolicy, ReclaimWithinCohort, WithinClusterQueue};
use crate::cluster::{AdmittedRow, Cluster, CqId, Millis, PreemptionConfig, WorkloadId};
use crate::policy::{
    Candidate, CandidateKind, FitMode, PolicyError, PolicyRef, PolicySet, PreemptionRequest,
    TopologyFit, builtin, verify,
};
use crate::quota::{FrAmounts, FrIdx, NodeId, Usage, UsageOverlay};

use super::assign::FrList;

use super::Fallback;
use super::budget::{Budgets, Hold};

/// What one cycle's computations share.
pub(super) struct Ctx<'a> {
    pub cluster: &'a Cluster,
    pub policies: &'a PolicySet,
    pub now: Millis,
    pub fallbacks: &'a RefCell<Vec<Fallback>>,
    /// Evictions within each ClusterQueue's budget window.
    pub budgets: &'a Budgets,
    /// Victims already chosen during one `get_assignments` call (one preemptor, one usage),
    /// by (needs, requests). The cycle's buffer, shared by its heads (cleared per call).
    pub targets_memo: &'a RefCell<Vec<TargetsMemo>>,
    /// Emptied candidate lists, kept by the scheduler between questions and cycles: a question
    /// collects its candidates into one of these rather than a new list grown candidate by
    /// candidate (see [`CandidateBuffers`]).
    pub candidate_buffers: &'a CandidateBuffers,
    /// The placement policy of each podSet placed since it was last emptied, in order (what
    /// admitted placements are attributed to).
    pub placed_by: RefCell<Vec<PolicyRef>>,
    /// Workloads that are not candidates: this cycle's victims while a preemptor whose targets
    /// they were is computed again as if they were gone (Kueue's `SimulateWorkloadRemoval`).
    pub gone: RefCell<rustc_hash::FxHashSet<WorkloadId>>,
    /// `gone` is not empty (read for every candidate; the set itself only then).
    pub some_gone: std::cell::Cell<bool>,
}

pub(super) type TargetsMemo = (FrList, FrAmounts, Targets);

/// Candidate lists to reuse. A preemption question at Kueue's large scale collects about a
/// hundred candidates; each list was grown from empty, reallocated and copied as it grew, and
/// ordering them built two more lists. A list goes back emptied, capacity kept, once its
/// question is answered.
#[derive(Default)]
pub(super) struct CandidateBuffers(RefCell<Vec<Vec<Candidate>>>);

impl CandidateBuffers {
    /// An empty list, with the capacity of an earlier one when there is one.
    fn take(&self) -> Vec<Candidate> {
        self.0.borrow_mut().pop().unwrap_or_default()
    }

    /// Returns a list for a later question.
    fn give_back(&self, mut list: Vec<Candidate>) {
        list.clear();
        if list.capacity() > 0 {
            self.0.borrow_mut().push(list);
        }
    }
}

impl Ctx<'_> {
    pub fn fallback(&self, policy: PolicyRef, extension: &'static str, error: PolicyError) {
        self.fallbacks.borrow_mut().push(Fallback {
            policy,
            extension,
            error,
        });
    }
}

/// A victim chosen for a preemptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub workload: WorkloadId,
    pub reason: &'static str,
}

/// The victims, and which policy chose them.
#[derive(Debug, Clone)]
pub struct Targets {
    pub targets: Vec<Target>,
    pub policy: PolicyRef,
    /// The victims the policy chose exceed the ClusterQueue's preemption budget: `targets` is
    /// empty, as when there are none.
    pub held: Option<Hold>,
}

impl Targets {
    pub fn none(policy: PolicyRef) -> Targets {
        Targets {
            targets: Vec::new(),
            policy,
            held: None,
        }
    }
}

#[derive(Clone, Copy)]
enum Policy {
    Never,
    LowerPriority,
    LowerOrNewerEqualPriority,
    Any,
}

fn within(p: WithinClusterQueue) -> Policy {
    match p {
        WithinClusterQueue::Never => Policy::Never,
        WithinClusterQueue::LowerPriority => Policy::LowerPriority,
        WithinClusterQueue::LowerOrNewerEqualPriority => Policy::LowerOrNewerEqualPriority,
    }
}

fn reclaim(p: ReclaimWithinCohort) -> Policy {
    match p {
        ReclaimWithinCohort::Never => Policy::Never,
        ReclaimWithinCohort::LowerPriority => Policy::LowerPriority,
        ReclaimWithinCohort::Any => Policy::Any,
    }
}

/// Kueue's `SatisfiesPreemptionPolicy`, on the preemptor's and the candidate's (priority,
/// queue-order timestamp).
fn satisfies(policy: Policy, preemptor: (i64, Millis), candidate: &AdmittedRow) -> bool {
    let (p, c) = (preemptor.0, candidate.priority);
    match policy {
        Policy::Never => false,
        Policy::LowerPriority => p > c,
        Policy::LowerOrNewerEqualPriority => p > c || (p == c && preemptor.1 < candidate.created),
        Policy::Any => true,
    }
}

struct Collector<'a, 'c> {
    ctx: &'a Ctx<'c>,
    usage: &'a Usage,
    /// The preemptor's effective priority and queue-order timestamp.
    preemptor: (i64, Millis),
    cq: CqId,
    config: PreemptionConfig,
    needs: &'a [FrIdx],
    out: Vec<Candidate>,
}

impl Collector<'_, '_> {
    /// Kueue's `findCandidatesForPolicy`: the workload holds quota of a flavor-resource that
    /// needs preemption (Kueue's `WorkloadUsesResources`: its usage lists exactly the
    /// flavor-resources its podSets were assigned), and the preemptor's policy for its queue
    /// (`withinClusterQueue` for the own queue, `reclaimWithinCohort` for others) allows
    /// preempting it.
    fn eligible(&self, row: &AdmittedRow, in_cq: CqId) -> bool {
        if !row.usage.iter().any(|(fr, _)| self.needs.contains(fr)) {
            return false;
        }
        if self.ctx.some_gone.get() && self.ctx.gone.borrow().contains(&row.workload) {
            return false;
        }
        let policy = if in_cq == self.cq {
            within(self.config.within_cluster_queue)
        } else {
            reclaim(self.config.reclaim_within_cohort)
        };
        satisfies(policy, self.preemptor, row)
    }

    fn classify(&self, row: &AdmittedRow, in_cq: CqId, advantage: bool) -> Option<CandidateKind> {
        if !self.eligible(row, in_cq) {
            return None;
        }
        let config = self.config;
        if in_cq == self.cq {
            return Some(CandidateKind::SameQueue);
        }
        if advantage {
            return Some(CandidateKind::HierarchicalReclaim);
        }
        if config.borrow_within_cohort == BorrowWithinCohortPolicy::Never {
            return Some(CandidateKind::ReclaimWithoutBorrowing);
        }
        let (c, p) = (row.priority, self.preemptor.0);
        let above_threshold = c >= p
            || config
                .max_priority_threshold
                .is_some_and(|t| c > i64::from(t));
        Some(if above_threshold {
            CandidateKind::ReclaimWithoutBorrowing
        } else {
            CandidateKind::ReclaimWhileBorrowing
        })
    }

    fn add_from_cq(&mut self, cq: CqId, lca: Option<NodeId>, advantage: bool) {
        self.add_classified(cq, lca, |c, row| c.classify(row, cq, advantage));
    }

    /// Fair sharing's candidates of one ClusterQueue (Kueue's `findCandidatesForPolicy`): own
    /// queue by `withinClusterQueue`, others by `reclaimWithinCohort`; another queue's are
    /// reclaimed (`InCohortReclamation`) while the preemptor stays within nominal quota, and
    /// otherwise subject to the fair-sharing strategies (`InCohortFairSharing`).
    fn add_fair(&mut self, cq: CqId, preemptor_within_nominal: bool) {
        // Another queue's candidates carry the lowest common cohort, as reclaim candidates do.
        let lca = (cq != self.cq)
            .then(|| {
                let cluster = self.ctx.cluster;
                let tree = &cluster.tree;
                tree.lowest_common_ancestor(cluster.cq(self.cq).node, cluster.cq(cq).node)
            })
            .flatten();
        self.add_classified(cq, lca, |c, row| {
            if !c.eligible(row, cq) {
                return None;
            }
            Some(if cq == c.cq {
                CandidateKind::SameQueue
            } else if preemptor_within_nominal {
                CandidateKind::HierarchicalReclaim
            } else {
                CandidateKind::FairSharing
            })
        });
    }

    /// The ClusterQueue's admitted workloads that `classify` keeps, as candidates. Reads only
    /// the queue's [`AdmittedRow`]s (and, under admission fair sharing, the LocalQueue usage).
    fn add_classified(
        &mut self,
        cq: CqId,
        lca: Option<NodeId>,
        classify: impl Fn(&Self, &AdmittedRow) -> Option<CandidateKind>,
    ) {
        let cluster = self.ctx.cluster;
        let info = cluster.cq(cq);
        let afs = cluster
            .settings
            .admission_fair_sharing
            .as_ref()
            .filter(|_| info.admission_fair_sharing);
        let lq_usage = |row: &AdmittedRow| {
            let (afs, lq) = (afs?, row.lq?);
            Some(
                cluster
                    .lq_usage
                    .weighted(lq, afs, cluster.local_queues[lq.index()].fair_weight),
            )
        };
        for row in cluster.admitted_rows(cq) {
            let Some(kind) = classify(self, row) else {
                continue;
            };
            self.out.push(Candidate {
                workload: row.workload,
                serial: row.serial,
                cluster_queue: cq,
                node: info.node,
                kind,
                lca,
                priority: row.priority,
                created: row.created,
                reserved_at: row.reserved_at,
                evicted: row.evicting,
                local_queue: row.lq,
                requeue_count: row.requeue_count,
                requeue_reason: row.requeue_reason,
                // A slice copy: `SmallVec`'s `clone` pushes item by item (3% of a native run
                // at Kueue's large scale, counted).
                usage: crate::quota::FrAmounts::from_slice(&row.usage),
                local_queue_usage: lq_usage(row),
            });
        }
    }

    /// Kueue's `collectCandidatesInSubtree`: queues and cohorts over their quota below `node`.
    /// Only children over their subtree quota are looked into, so a node with none is passed
    /// over without visiting its children ([`crate::quota::QuotaTree::any_child_over`]).
    fn add_subtree(&mut self, node: NodeId, root: NodeId, skip: Option<NodeId>, advantage: bool) {
        let tree = &self.ctx.cluster.tree;
        if !tree.any_child_over(self.usage, node, self.needs) {
            return;
        }
        let own_node = self.ctx.cluster.cq(self.cq).node;
        for &child in &tree.node(node).children {
            if Some(child) == skip || child == own_node {
                continue;
            }
            if tree.within_nominal(self.usage, child, self.needs) {
                continue;
            }
            match self.ctx.cluster.cq_of_node(child) {
                Some(cq) => self.add_from_cq(cq, Some(root), advantage),
                None => self.add_subtree(child, root, skip, advantage),
            }
        }
    }
}

/// Every eligible candidate for the preemptor, in Kueue's candidate order.
fn collect_candidates(
    ctx: &Ctx<'_>,
    usage: &Usage,
    preemptor: WorkloadId,
    cq: CqId,
    needs: &[FrIdx],
    requests: &[(FrIdx, i64)],
) -> Vec<Candidate> {
    let cluster = ctx.cluster;
    let info = cluster.cq(cq);
    let wl = cluster.workload(preemptor);
    let mut c = Collector {
        ctx,
        usage,
        preemptor: (wl.effective_priority(), wl.created),
        cq,
        config: info.preemption,
        needs,
        out: ctx.candidate_buffers.take(),
    };
    let tree = &cluster.tree;
    if cluster.settings.fair_sharing_enabled() {
        // Kueue's `findCandidates` under fair sharing: the own queue, and every borrowing
        // queue of the cohort tree.
        let within_nominal = needs.iter().all(|&fr| {
            let extra = requests.iter().find(|r| r.0 == fr).map_or(0, |r| r.1);
            !tree.borrowing_with(usage, info.node, fr, extra)
        });
        if info.preemption.within_cluster_queue != WithinClusterQueue::Never {
            c.add_fair(cq, within_nominal);
        }
        if tree.parent(info.node).is_some()
            && info.preemption.reclaim_within_cohort != ReclaimWithinCohort::Never
        {
            for node in tree.subtree_cluster_queues(tree.root(info.node)) {
                let Some(other) = cluster.cq_of_node(node) else {
                    continue;
                };
                if other != cq && needs.iter().any(|&fr| tree.borrowing(usage, node, fr)) {
                    c.add_fair(other, within_nominal);
                }
            }
        }
        return in_candidate_order(c.out, cq, ctx.candidate_buffers);
    }
    if info.preemption.within_cluster_queue != WithinClusterQueue::Never {
        c.add_from_cq(cq, None, false);
    }
    if tree.parent(info.node).is_some()
        && info.preemption.reclaim_within_cohort != ReclaimWithinCohort::Never
    {
        let (mut advantage, mut remaining) = tree.quantities_fit(usage, info.node, requests);
        let mut previous = None;
        for ancestor in tree.ancestors(info.node) {
            c.add_subtree(ancestor, ancestor, previous, advantage);
            let (fits, rest) = tree.quantities_fit(usage, ancestor, &remaining);
            remaining = rest;
            advantage |= fits;
            previous = Some(ancestor);
        }
    }
    in_candidate_order(c.out, cq, ctx.candidate_buffers)
}

/// Candidates in Kueue's candidate order (a total order), so that a policy sorting them again
/// — as Kueue's own algorithms do — finds them already sorted. Out of order, they are copied
/// once each into a list from `buffers` (and `out` goes back there): a permutation by swaps
/// moved each ≈ 160-byte candidate three times (4.6% of a native run at Kueue's large scale,
/// counted, in `memcpy` alone).
fn in_candidate_order(out: Vec<Candidate>, cq: CqId, buffers: &CandidateBuffers) -> Vec<Candidate> {
    if out.len() < 2 {
        return out;
    }
    let order = builtin::candidate_order(&out, cq);
    if order.iter().enumerate().all(|(p, &i)| p == i) {
        return out;
    }
    let mut sorted = buffers.take();
    sorted.extend(order.iter().map(|&i| out[i].copied()));
    buffers.give_back(out);
    sorted
}

/// Asks the preemption policy for victims that make `requests` fit (and, with `topology`, the
/// preemptor's TAS podSets placeable), verifying the answer.
pub(super) fn get_targets(
    ctx: &Ctx<'_>,
    usage: &Usage,
    preemptor: WorkloadId,
    cq: CqId,
    needs: &[FrIdx],
    requests: &[(FrIdx, i64)],
    topology: Option<&dyn TopologyFit>,
) -> Targets {
    // A topology question is not the quota-only one the memo holds.
    if topology.is_some() {
        return find_targets(ctx, usage, preemptor, cq, needs, requests, topology);
    }
    if let Some((_, _, t)) = ctx
        .targets_memo
        .borrow()
        .iter()
        .find(|(n, r, _)| n.as_slice() == needs && r.as_slice() == requests)
    {
        return t.clone();
    }
    let targets = find_targets(ctx, usage, preemptor, cq, needs, requests, None);
    ctx.targets_memo
        .borrow_mut()
        .push((needs.into(), requests.into(), targets.clone()));
    targets
}

fn find_targets(
    ctx: &Ctx<'_>,
    usage: &Usage,
    preemptor: WorkloadId,
    cq: CqId,
    needs: &[FrIdx],
    requests: &[(FrIdx, i64)],
    topology: Option<&dyn TopologyFit>,
) -> Targets {
    let policy = &ctx.policies.preemption;
    let candidates = collect_candidates(ctx, usage, preemptor, cq, needs, requests);
    if candidates.is_empty() {
        ctx.candidate_buffers.give_back(candidates);
        return Targets::none(policy.id());
    }
    let wl = ctx.cluster.workload(preemptor);
    let info = ctx.cluster.cq(cq);
    let req = PreemptionRequest {
        preemptor,
        cluster_queue: cq,
        node: info.node,
        priority: wl.effective_priority(),
        created: wl.created,
        config: info.preemption,
        requests: requests.to_vec(),
        needs_preemption: needs.to_vec(),
        candidates,
        fair_sharing: ctx.cluster.settings.fair_sharing.as_deref(),
        cluster: ctx.cluster,
        tree: &ctx.cluster.tree,
        usage,
        now: ctx.now,
        topology,
    };
    let span = tracing::debug_span!("policy", extension = "preemption", plugin = %policy.id().name);
    let answer = span
        .in_scope(|| policy.select_victims(&req))
        .and_then(|answer| match answer {
            Some(set) => verify::victims(&req, &set, policy.allows_extra_victims())
                .map(|()| {
                    if policy.allows_extra_victims() {
                        let extra = verify::extra_victims(&req, &set);
                        if extra > 0 {
                            policy.extra_victims(extra);
                        }
                    }
                    Some(set)
                })
                .map_err(|e| refused(policy.as_ref(), e)),
            None => Ok(None),
        });
    let (answer, used) = match answer {
        Ok(answer) => (answer, policy.id()),
        Err(e) => {
            ctx.fallback(policy.id(), "preemption", e);
            (builtin::select_victims(&req), PolicyRef::builtin())
        }
    };
    if !ctx.policies.shadows.preemption.is_empty() {
        ctx.policies.shadows.preemption(&req, answer.as_ref());
    }
    let targets: Vec<Target> = answer
        .map(|set| {
            set.victims
                .iter()
                .map(|&i| Target {
                    workload: req.candidates[i].workload,
                    reason: req.candidates[i].kind.reason(),
                })
                .collect()
        })
        .unwrap_or_default();
    ctx.candidate_buffers.give_back(req.candidates);
    // The budget judges the verified answer, whoever gave it; over budget, nobody is evicted.
    let held = (!ctx.cluster.cq(cq).budget.is_unlimited())
        .then(|| {
            let needed = targets
                .iter()
                .filter(|t| !ctx.cluster.is_evicting(t.workload))
                .count();
            let needed = u32::try_from(needed).unwrap_or(u32::MAX);
            ctx.budgets
                .check(ctx.cluster, cq, ctx.now, needed)
                .map(|hold| (needed, hold))
        })
        .flatten();
    if let Some((needed, hold)) = held {
        tracing::debug!(workload = %wl.key, needed, "victims over the preemption budget");
        return Targets {
            held: Some(hold),
            ..Targets::none(used)
        };
    }
    Targets {
        targets,
        policy: used,
        held: None,
    }
}

/// Kueue's `PreemptionOracle.SimulatePreemption` for one flavor-resource: whether preemption
/// could make room, and the borrowing level afterwards. Victims over the preemption budget
/// are no victims: the flavor is `NoPreemptionCandidates`, and flavor assignment may try the
/// next one.
pub(super) fn simulate(
    ctx: &Ctx<'_>,
    usage: &Usage,
    preemptor: WorkloadId,
    cq: CqId,
    fr: FrIdx,
    val: i64,
) -> (FitMode, u32) {
    let tree = &ctx.cluster.tree;
    let node = ctx.cluster.cq(cq).node;
    let found = get_targets(ctx, usage, preemptor, cq, &[fr], &[(fr, val)], None);
    if found.targets.is_empty() {
        return (
            FitMode::NoPreemptionCandidates,
            tree.borrow_level(usage, node, fr, val).0,
        );
    }
    let after = removed(ctx.cluster, usage, found.targets.iter().map(|t| t.workload));
    let borrow = tree.borrow_level(&after, node, fr, val).0;
    let same_queue = found
        .targets
        .iter()
        .any(|t| ctx.cluster.admission(t.workload).map(|a| a.cluster_queue) == Some(cq));
    let mode = if same_queue {
        FitMode::Preempt
    } else {
        FitMode::Reclaim
    };
    (mode, borrow)
}

/// Tells a preemption policy its answer was refused, and returns the error.
fn refused(policy: &dyn crate::policy::PreemptionPolicy, e: verify::InvalidAnswer) -> PolicyError {
    let e = PolicyError::Invalid(e);
    policy.refused(&e);
    e
}

/// `usage` with the given workloads' quota removed, as an attempt over it: it holds only the
/// entries the removal changed (no copy of the whole cluster's usage).
pub(super) fn removed<'u>(
    cluster: &Cluster,
    usage: &'u Usage,
    workloads: impl IntoIterator<Item = WorkloadId>,
) -> UsageOverlay<'u> {
    let mut out = UsageOverlay::new(usage);
    charge(cluster, &mut out, workloads, -1);
    out
}

/// `f`'s answer on `usage` with the given workloads' quota removed, in place: their quota is
/// taken out, `f` asks, and it is put back (Kueue's `SimulateWorkloadRemoval` and the revert it
/// returns, in `updateAssignmentIfNeeded`). A question on the snapshot without this cycle's
/// victims copies nothing; a copy per question grew with the whole cluster's usage, which made
/// the cycle's cost grow with ClusterQueues × preemptors. Putting back restores every figure
/// exactly (under a new [`Usage::epoch`]): a cohort's usage and its over-quota counts follow
/// from its ClusterQueues' alone.
pub(super) fn asked_without<W, R>(
    cluster: &Cluster,
    usage: &mut Usage,
    workloads: W,
    f: impl FnOnce(&Usage) -> R,
) -> R
where
    W: IntoIterator<Item = WorkloadId> + Clone,
{
    charge(cluster, usage, workloads.clone(), -1);
    let answer = f(usage);
    charge(cluster, usage, workloads, 1);
    answer
}

/// Adds (`sign` 1) or takes out (−1) the given workloads' admitted quota.
fn charge(
    cluster: &Cluster,
    out: &mut impl crate::quota::UsageWrite,
    workloads: impl IntoIterator<Item = WorkloadId>,
    sign: i64,
) {
    for id in workloads {
        if let Some(a) = cluster.admission(id) {
            let node = cluster.cq(a.cluster_queue).node;
            for &(fr, v) in &a.usage {
                cluster.tree.add_usage(out, node, fr, sign * v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CandidateBuffers, asked_without, in_candidate_order, removed};
    use crate::quota::UsageRead;

    /// The question sees the usage without the workloads (as the attempt overlay sees it), and
    /// the usage is as before once it has answered.
    #[test]
    fn asked_without_answers_on_the_usage_without_them_and_puts_it_back() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/scenarios/preempt-overlapping-targets-fit-after.yaml");
        let cluster = crate::sim::Scenario::load(&[path]).expect("loads").cluster;
        let v = cluster.find_workload("default/v").expect("v");
        let (q3, all) = {
            let q3 = cluster.cq(cluster.cq_by_name["q3"]).node;
            (q3, cluster.tree.root(q3))
        };
        let fr = cluster.admission(v).expect("admitted").usage[0].0;
        let mut usage = cluster.usage.clone();
        let before = usage.clone();
        assert_eq!((usage.get(q3, fr), usage.get(all, fr)), (4000, 4000));
        let expected = {
            let overlay = removed(&cluster, &usage, [v]);
            (overlay.get(q3, fr), overlay.get(all, fr))
        };
        assert_eq!(expected, (0, 0));
        let seen = asked_without(&cluster, &mut usage, [v], |u| {
            (u.get(q3, fr), u.get(all, fr))
        });
        assert_eq!(seen, expected);
        assert_eq!(usage, before, "put back");
    }

    /// Candidates come out in the built-in's candidate order, each equal field for field to
    /// the one collected (its usage included), whatever order they were collected in; the
    /// list they were collected in goes back to the buffers for the next question.
    #[test]
    fn candidates_come_out_in_candidate_order_unchanged() {
        use crate::cluster::CqId;
        use crate::policy::{Candidate, builtin};
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let buffers = CandidateBuffers::default();
        for n in [0, 1, 2, 5, 17, 94, 300] {
            let collected: Vec<Candidate> = (0..n)
                .map(|i| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let mut c = Candidate::test(i, (state % 3) as u32);
                    c.priority = (state >> 8) as i64 % 7;
                    c.reserved_at = (state >> 16) as i64 % 11;
                    c.usage.push((crate::quota::FrIdx(0), i64::from(i)));
                    c
                })
                .collect();
            let expected: Vec<Candidate> = builtin::candidate_order(&collected, CqId(0))
                .iter()
                .map(|&i| collected[i].clone())
                .collect();
            let got = in_candidate_order(collected, CqId(0), &buffers);
            assert_eq!(got, expected, "{n} candidates");
            let sorted = builtin::candidate_order(&got, CqId(0));
            assert!(sorted.iter().enumerate().all(|(p, &i)| p == i));
        }
        assert!(
            !buffers.0.borrow().is_empty(),
            "an unordered list went back to the buffers"
        );
    }
}
