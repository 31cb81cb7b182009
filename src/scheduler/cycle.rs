//! One scheduling cycle, in Kueue's phases: (1) pop one head per active ClusterQueue,
//! (2) snapshot quota usage, (3) nominate: flavor assignment and preemption targets per head,
//! (4) order the heads, (5) admit or preempt in that order on the snapshot, (6) requeue the rest.

use std::cell::RefCell;

use crate::api::ReclaimWithinCohort;
use crate::cluster::{Admission, Cluster, CqId, Millis, PodSetAdmission, WorkloadId};
use crate::policy::{HeadEntry, PolicyContext, PolicyRef, TopologyFit, verify};
use crate::queue::{Head, RequeueReason, SortKey};
use crate::quota::{FrAmounts, NodeId, Usage, UsageRead};
use crate::topology::TasUsage;

use super::assign::{Assignment, AssignmentMode, assign_flavors, reduce_pod_sets};
use super::preempt::{
    CandidateBuffers, Ctx, Target, TargetsMemo, asked_without, get_targets, removed,
};
use super::tas::{Placer, VictimFit};
use super::texts::Message;
use super::{CycleOutcome, Decision, Scheduler};

/// How many heads ahead the nomination and requeue loops ask for the lines they will read (a
/// head's workload record, its queue slot; [`wasq_alloc::prefetch`]): at ten times Kueue's
/// large scale neither is in the cache, and each was a wait on memory per head and cycle.
const PREFETCH_AHEAD: usize = 4;

struct Entry {
    workload: WorkloadId,
    cq: CqId,
    /// The key it was queued under, from its queue ([`Head::key`]): ordering reads it, and it
    /// goes back under it.
    key: SortKey,
    assignment: Assignment,
    targets: Vec<Target>,
    preemption_policy: PolicyRef,
    /// No targets because the ones found exceed the preemption budget.
    held: Option<super::budget::Hold>,
}

/// How an entry left the cycle.
enum Outcome {
    Admitted,
    Preempting,
    Requeue {
        reason: RequeueReason,
        label: &'static str,
        message: Said,
        /// Held by the per-minute preemption budget until then.
        wake: Option<Millis>,
    },
}

/// What a head going back to its queue is told.
enum Said {
    /// Why its assignment (the one it ends the cycle with) does not fit, from the scheduler's
    /// [`PendingTexts`](super::texts::PendingTexts) once the cycle is processed.
    NoFit,
    Text(Message),
}

/// A head going back to its queue: (workload, ClusterQueue, the key it was queued under,
/// reason, label, message).
type Requeue = (
    WorkloadId,
    CqId,
    SortKey,
    RequeueReason,
    &'static str,
    Message,
);

/// The buffers of a cycle, kept by the scheduler between cycles: emptied when a cycle ends,
/// never dropped, so that the steady state allocates none of them again (a cycle at 10,000
/// heads used to allocate and free several buffers of 64 KiB–2.5 MiB each, and every such
/// free made glibc consolidate all the small chunks the cycle had freed).
#[derive(Default)]
pub(super) struct Scratch {
    heads: Vec<Head>,
    /// The cycle's quota snapshot, copied into the previous cycle's buffer.
    snapshot: Usage,
    entries: Vec<Entry>,
    requeues: Vec<Requeue>,
    /// The processing order (indices into `entries`).
    order: Vec<usize>,
    /// Per entry, the ordering policy (an index into `policies`) that placed it.
    ordered_by: Vec<usize>,
    policies: Vec<PolicyRef>,
    processed: Vec<(usize, Outcome, Recomputed)>,
    /// The ordering policy's input.
    head_entries: Vec<HeadEntry>,
    /// Victims found per question, for one head at a time (see [`Ctx::targets_memo`]).
    targets_memo: RefCell<Vec<TargetsMemo>>,
    /// See [`Ctx::candidate_buffers`]: kept across cycles.
    candidate_buffers: CandidateBuffers,
    /// The decisions list a driver handed back ([`Scheduler::recycle`]), emptied: the next
    /// cycle's outcome is written into it. At 10,000 heads a cycle's list is ≈ 1 MB, and a new
    /// one each cycle was fresh memory the kernel zeroed each time (BENCHMARKS.md, stop 46).
    pub(super) decisions: Vec<Decision>,
}

impl Scratch {
    /// Empties every buffer, keeping its capacity.
    fn clear(&mut self) {
        self.heads.clear();
        self.entries.clear();
        self.requeues.clear();
        self.order.clear();
        self.ordered_by.clear();
        self.policies.clear();
        self.processed.clear();
        self.head_entries.clear();
        self.targets_memo.get_mut().clear();
    }
}

pub(super) fn run(s: &mut Scheduler, now: Millis) -> CycleOutcome {
    let span = tracing::info_span!("cycle", n = s.cycle);
    let _guard = span.enter();
    let mut scratch = std::mem::take(&mut s.scratch);
    let outcome = run_with(s, &mut scratch, now);
    scratch.clear();
    s.scratch = scratch;
    outcome
}

fn run_with(s: &mut Scheduler, scratch: &mut Scratch, now: Millis) -> CycleOutcome {
    let mut outcome = CycleOutcome {
        cycle: s.cycle,
        heads: 0,
        decisions: std::mem::take(&mut scratch.decisions),
    };

    // 1. Heads.
    let cluster = &s.cluster;
    s.queues
        .heads_into(&mut scratch.heads, |cq| cluster.cq(cq).is_active());
    outcome.heads = scratch.heads.len();
    if scratch.heads.is_empty() {
        return outcome;
    }
    outcome.decisions.reserve(scratch.heads.len());

    // 2. Snapshot.
    scratch.snapshot.copy_from(&s.cluster.usage);
    let snapshot = &mut scratch.snapshot;

    // 3. Nominate.
    let fallbacks = RefCell::new(Vec::new());
    let entries = &mut scratch.entries;
    let requeues = &mut scratch.requeues;
    for (
        i,
        &Head {
            cq,
            workload: wl,
            key,
        },
    ) in scratch.heads.iter().enumerate()
    {
        if let Some(ahead) = scratch.heads.get(i + PREFETCH_AHEAD) {
            wasq_alloc::prefetch(s.cluster.workload(ahead.workload), 2);
        }
        let workload = s.cluster.workload(wl);
        debug_assert_eq!(
            workload.cluster_queue,
            Some(cq),
            "queued in its ClusterQueue"
        );
        if !workload.namespace_matches {
            requeues.push((
                wl,
                cq,
                key,
                RequeueReason::NamespaceMismatch,
                "Misconfigured",
                "Workload namespace doesn't match ClusterQueue selector".into(),
            ));
            continue;
        }
        let ctx = Ctx {
            cluster: &s.cluster,
            policies: s.policies_for(cq),
            now,
            fallbacks: &fallbacks,
            budgets: &s.budgets,
            targets_memo: &scratch.targets_memo,
            candidate_buffers: &scratch.candidate_buffers,
            placed_by: Default::default(),
            gone: Default::default(),
            some_gone: Default::default(),
        };
        let (assignment, targets) =
            get_assignments(&ctx, snapshot, s.cluster.tas.current(), wl, cq);
        entries.push(Entry {
            workload: wl,
            cq,
            key,
            assignment,
            targets: targets.targets,
            preemption_policy: targets.policy,
            held: targets.held,
        });
    }

    // 4 and 5. Order, then process in that order. An ordering that reads quota usage (fair
    // sharing) answers speculatively, assuming each head takes its assignment's usage in turn;
    // when one does not (not admitted, or admitted with another assignment), the remaining
    // heads of its cohort tree are ordered again on the snapshot as it now is (Kueue re-runs
    // its tournament at every pop); heads of other trees keep their places, since no usage of
    // theirs changed. The built-in fair-sharing order standing in for a failed call is
    // speculative too.
    let reads_usage = s
        .default_policies
        .ordering
        .needs(&PolicyContext::of(&s.cluster, now))
        .tree_usage;
    let speculative = |by: &PolicyRef| {
        reads_usage || (*by == PolicyRef::builtin() && s.cluster.settings.fair_sharing_enabled())
    };
    let tree = &s.cluster.tree;
    let root_of = |k: usize| tree.root(s.cluster.cq(entries[k].cq).node);
    let order = &mut scratch.order;
    let by = order_entries(
        s,
        entries,
        None,
        &mut scratch.head_entries,
        order,
        snapshot,
        &fallbacks,
        now,
    );
    let mut dynamic = speculative(&by);
    let policies = &mut scratch.policies;
    policies.push(by);
    let ordered_by = &mut scratch.ordered_by;
    ordered_by.resize(entries.len(), 0);
    let mut preempted = Preempted::default();
    let mut tas_usage = s.cluster.tas.current().clone();
    let processed = &mut scratch.processed;
    let mut pos = 0;
    while pos < order.len() {
        let i = order[pos];
        pos += 1;
        let e = &entries[i];
        let ctx = Ctx {
            cluster: &s.cluster,
            policies: s.policies_for(e.cq),
            now,
            fallbacks: &fallbacks,
            budgets: &s.budgets,
            targets_memo: &scratch.targets_memo,
            candidate_buffers: &scratch.candidate_buffers,
            placed_by: Default::default(),
            gone: Default::default(),
            some_gone: Default::default(),
        };
        let (result, recomputed, took) = process(&ctx, snapshot, &mut preempted, &mut tas_usage, e);
        processed.push((i, result, recomputed));
        let node = s.cluster.cq(e.cq).node;
        if !dynamic || tree.parent(node).is_none() || took.is_some_and(|u| u == e.assignment.usage)
        {
            continue;
        }
        let root = tree.root(node);
        let same: Vec<usize> = order[pos..]
            .iter()
            .copied()
            .filter(|&k| root_of(k) == root)
            .collect();
        if same.len() < 2 {
            continue;
        }
        let mut again = Vec::with_capacity(same.len());
        let by = order_entries(
            s,
            entries,
            Some(&same),
            &mut scratch.head_entries,
            &mut again,
            snapshot,
            &fallbacks,
            now,
        );
        dynamic = speculative(&by);
        policies.push(by);
        let by = policies.len() - 1;
        let mut next = again.into_iter();
        for slot in &mut order[pos..] {
            if root_of(*slot) == root
                && let Some(k) = next.next()
            {
                *slot = k;
                ordered_by[k] = by;
            }
        }
    }
    for (i, result, recomputed) in processed.drain(..) {
        let e = &mut entries[i];
        if let Some(again) = recomputed {
            (e.assignment, e.targets) = *again;
        }
        match result {
            Outcome::Admitted => {
                let admission = match s.cluster.reserve(e.workload, to_admission(s, e), now) {
                    Ok(shared) => shared,
                    Err(err) => {
                        tracing::error!(workload = %s.cluster.workload(e.workload).key, %err, "refused double admission");
                        continue;
                    }
                };
                charge_admission(s, e.workload, e.cq);
                tracing::debug!(workload = %s.cluster.workload(e.workload).key, "admitted");
                outcome.decisions.push(Decision::Admitted {
                    workload: e.workload,
                    admission,
                    policy: e.assignment.policy.clone(),
                    ordered_by: policies[ordered_by[i]].clone(),
                    placed_by: e
                        .assignment
                        .tas
                        .as_mut()
                        .map(|t| std::mem::take(&mut t.placed_by))
                        .unwrap_or_default(),
                });
            }
            Outcome::Preempting => {
                // As Kueue's `IssuePreemptions`: a target already being evicted counts as
                // preempted (the preemptor waits for it) but is not evicted again.
                let (mut evicted, mut issued) = (0, 0);
                for t in &e.targets {
                    let Ok(new) = s.cluster.mark_evicting(t.workload) else {
                        continue;
                    };
                    evicted += 1;
                    if new {
                        issued += 1;
                        outcome.decisions.push(Decision::Preempted {
                            workload: t.workload,
                            preemptor: e.workload,
                            reason: t.reason,
                            policy: e.preemption_policy.clone(),
                        });
                    }
                }
                s.budgets.record(e.cq, now, issued);
                // Kueue's `markPreemptionOutcome`: the flavor assigner's message, and how many
                // victims the preemptor waits for.
                let said = s.texts.message(
                    &e.assignment,
                    &s.cluster.names,
                    &s.cluster.workload(e.workload).pod_sets,
                );
                let message = if evicted > 0 {
                    format!("{said}. Pending the preemption of {evicted} workload(s)").into()
                } else {
                    said
                };
                requeues.push((
                    e.workload,
                    e.cq,
                    e.key,
                    RequeueReason::PendingPreemption,
                    "WaitingForPreemptedWorkloads",
                    message,
                ));
            }
            Outcome::Requeue {
                reason,
                label,
                message,
                wake,
            } => {
                if let Some(at) = wake {
                    s.budgets.wake_at(e.cq, at);
                }
                let message = match message {
                    Said::NoFit => s.texts.message(
                        &e.assignment,
                        &s.cluster.names,
                        &s.cluster.workload(e.workload).pod_sets,
                    ),
                    Said::Text(m) => m,
                };
                requeues.push((e.workload, e.cq, e.key, reason, label, message));
            }
        }
    }

    // 6. Requeue.
    let mut drained = requeues.drain(..);
    while let Some((wl, cq, key, reason, label, message)) = drained.next() {
        if let Some(ahead) = drained.as_slice().get(PREFETCH_AHEAD) {
            s.queues.prefetch(ahead.0);
        }
        s.queues.requeue(cq, wl, key, reason);
        let parked = s.queues.is_inadmissible(wl);
        outcome.decisions.push(Decision::NotAdmitted {
            workload: wl,
            reason: label.into(),
            message,
            parked,
            policy: s.policies_for(cq).flavors.id(),
        });
    }
    for f in fallbacks.into_inner() {
        s.record_fallback(f.policy, f.extension, f.error);
    }
    outcome
}

/// Flavor assignment, then preemption targets, then partial admission (Kueue's
/// `getInitialAssignments`). A preemptor left without victims is `held` when a preemption
/// budget refused victims for it during the search (for the chosen flavors or another).
/// `tas` is the leaf usage placements are checked against.
fn get_assignments(
    ctx: &Ctx<'_>,
    usage: &Usage,
    tas: &TasUsage,
    wl: WorkloadId,
    cq: CqId,
) -> (Assignment, super::preempt::Targets) {
    // Usage is fixed for this call: victims found for one question can answer the same
    // question again (the preemption oracle and the targets of a single-resource assignment).
    ctx.targets_memo.borrow_mut().clear();
    let (assignment, mut targets) = assign_and_find_targets(ctx, usage, tas, wl, cq);
    if assignment.mode() == AssignmentMode::Preempt
        && targets.targets.is_empty()
        && targets.held.is_none()
    {
        targets.held = ctx
            .targets_memo
            .borrow()
            .iter()
            .find_map(|(_, _, t)| t.held);
    }
    (assignment, targets)
}

fn assign_and_find_targets(
    ctx: &Ctx<'_>,
    usage: &Usage,
    tas: &TasUsage,
    wl: WorkloadId,
    cq: CqId,
) -> (Assignment, super::preempt::Targets) {
    let no_targets = || super::preempt::Targets::none(ctx.policies.preemption.id());
    let full = super::tas::screen(ctx, tas, wl, cq, assign_flavors(ctx, usage, wl, cq, None));
    match full.mode() {
        AssignmentMode::Fit => return (full, no_targets()),
        AssignmentMode::Preempt => {
            let t = targets_for(ctx, usage, tas, wl, cq, &full);
            if !t.targets.is_empty() {
                return (full, t);
            }
        }
        AssignmentMode::NoFit => {}
    }
    let info = ctx.cluster.workload(wl);
    if info.pod_sets.iter().any(|ps| ps.min_count.is_some()) {
        let full_counts: Vec<i32> = info.pod_sets.iter().map(|ps| ps.count).collect();
        let min_counts: Vec<i32> = info
            .pod_sets
            .iter()
            .map(|ps| ps.min_count.unwrap_or(ps.count))
            .collect();
        let found = reduce_pod_sets(&full_counts, &min_counts, |counts| {
            let a = assign_flavors(ctx, usage, wl, cq, Some(counts));
            let a = super::tas::screen(ctx, tas, wl, cq, a);
            match a.mode() {
                AssignmentMode::Fit => Some((a, no_targets())),
                AssignmentMode::Preempt => {
                    let t = targets_for(ctx, usage, tas, wl, cq, &a);
                    (!t.targets.is_empty()).then_some((a, t))
                }
                AssignmentMode::NoFit => None,
            }
        });
        if let Some(found) = found {
            return found;
        }
    }
    (full, no_targets())
}

/// The victims an assignment that needs preemption would take, the topology check included
/// when it has TAS podSets.
fn targets_for(
    ctx: &Ctx<'_>,
    usage: &Usage,
    tas: &TasUsage,
    wl: WorkloadId,
    cq: CqId,
    a: &Assignment,
) -> super::preempt::Targets {
    let topology = VictimFit::of(ctx.cluster, tas, wl, cq, a);
    get_targets(
        ctx,
        usage,
        wl,
        cq,
        &a.needs_preemption(ctx),
        &a.usage,
        topology.as_ref().map(|t| t as &dyn TopologyFit),
    )
}

/// The order in which `subset` (indices into `entries`; `None`: all of them) is processed, by
/// the default ordering binding, verified; the built-in order when the call fails: written to
/// `out` (cleared first). Returns which policy decided. `heads` is a buffer for the policy's
/// input.
#[allow(clippy::too_many_arguments)]
fn order_entries(
    s: &Scheduler,
    entries: &[Entry],
    subset: Option<&[usize]>,
    heads: &mut Vec<HeadEntry>,
    out: &mut Vec<usize>,
    usage: &Usage,
    fallbacks: &RefCell<Vec<super::Fallback>>,
    now: Millis,
) -> PolicyRef {
    heads.clear();
    let all = 0..entries.len();
    let members: &mut dyn Iterator<Item = usize> = match subset {
        Some(subset) => &mut subset.iter().copied(),
        None => &mut all.into_iter(),
    };
    heads.extend(members.map(|i| {
        let e = &entries[i];
        let wl = s.cluster.workload(e.workload);
        HeadEntry {
            workload: e.workload,
            cluster_queue: e.cq,
            has_reservation: false,
            borrow_level: e.assignment.borrowing,
            priority: wl.effective_priority(),
            created: wl.created,
            queued: wl.queued,
            local_queue: wl.lq,
            key: e.key,
            usage: e.assignment.usage.clone(),
            requeue_count: wl.requeue_count,
            requeue_reason: wl.requeue_reason,
        }
    }));
    // The cycle order spans every ClusterQueue, so the default binding decides it.
    let policy = &s.default_policies.ordering;
    let cx = PolicyContext {
        cluster: &s.cluster,
        usage,
        now,
    };
    let span = tracing::debug_span!("policy", extension = "ordering", call = "order-heads", plugin = %policy.id().name, batch = heads.len());
    let answer = span
        .in_scope(|| policy.order_heads(&cx, heads))
        .and_then(|order| {
            verify::head_order(&order, heads.len())
                .map(|()| order)
                .map_err(|e| {
                    let e = crate::policy::PolicyError::Invalid(e);
                    policy.refused(&e);
                    e
                })
        });
    let (order, by) = match answer {
        Ok(order) => (order, policy.id()),
        Err(e) => {
            fallbacks.borrow_mut().push(super::Fallback {
                policy: policy.id(),
                extension: "ordering",
                error: e,
            });
            (
                crate::policy::builtin::order_heads(&cx, heads),
                PolicyRef::builtin(),
            )
        }
    };
    let shadows = &s.default_policies.shadows;
    if !shadows.ordering.is_empty() {
        shadows.order_heads(&cx, heads, &order);
    }
    out.clear();
    out.extend(
        order
            .into_iter()
            .map(|k| subset.map_or(k, |subset| subset[k])),
    );
    by
}

fn fits(
    ctx: &Ctx<'_>,
    usage: &impl UsageRead,
    cq: CqId,
    needed: &[(crate::quota::FrIdx, i64)],
) -> bool {
    let node = ctx.cluster.cq(cq).node;
    needed
        .iter()
        .all(|&(fr, v)| ctx.cluster.tree.available(usage, node, fr) >= v)
}

/// This cycle's victims, also by the root of their ClusterQueue's cohort tree: an entry's
/// fit reads only its own tree's usage, so it removes only that tree's victims (not every
/// victim of the cycle so far).
#[derive(Default)]
struct Preempted {
    all: rustc_hash::FxHashSet<WorkloadId>,
    by_root: rustc_hash::FxHashMap<NodeId, Vec<WorkloadId>>,
}

impl Preempted {
    fn contains(&self, id: WorkloadId) -> bool {
        self.all.contains(&id)
    }

    /// Victims of an entry whose ClusterQueue is under `root`.
    fn extend(&mut self, root: NodeId, victims: impl IntoIterator<Item = WorkloadId>) {
        let in_tree = self.by_root.entry(root).or_default();
        for id in victims {
            if self.all.insert(id) {
                in_tree.push(id);
            }
        }
    }

    fn in_tree(&self, root: NodeId) -> impl Iterator<Item = WorkloadId> + Clone + '_ {
        self.by_root.get(&root).into_iter().flatten().copied()
    }
}

/// The TAS usage without what `workloads` placed (`None` without TAS: nothing to take out).
fn without_placements(
    cluster: &Cluster,
    tas: &TasUsage,
    workloads: impl Iterator<Item = WorkloadId>,
) -> Option<TasUsage> {
    if cluster.tas.is_empty() {
        return None;
    }
    let mut usage = tas.clone();
    for id in workloads {
        for p in cluster
            .admission(id)
            .into_iter()
            .flat_map(|a| a.pod_sets.iter().filter_map(|ps| ps.topology.as_ref()))
        {
            cluster.tas.remove_from_snapshot(&mut usage, p);
        }
    }
    Some(usage)
}

/// A nomination computed again during processing (it replaces the entry's). Boxed: it is
/// rare, and every processed entry carries this slot through the cycle's list of outcomes
/// (unboxed, an assignment's size per head: 4 MB a cycle at 10,000 heads, written and read
/// again).
type Recomputed = Option<Box<(Assignment, Vec<Target>)>>;

/// The usage an entry added to the snapshot in full (admitted, preempting, or deferred), if so.
type Took = Option<FrAmounts>;

/// The entry's nomination, or the one computed again for it.
fn current<'a>(e: &'a Entry, own: &'a Recomputed) -> (&'a Assignment, &'a [Target]) {
    match own {
        Some(b) => (&b.0, &b.1),
        None => (&e.assignment, &e.targets),
    }
}

/// Kueue's `processEntry` on the snapshot. Reads the entry's nomination in place; only a
/// nomination computed again is owned (and returned).
fn process(
    ctx: &Ctx<'_>,
    snapshot: &mut Usage,
    preempted: &mut Preempted,
    tas: &mut TasUsage,
    e: &Entry,
) -> (Outcome, Recomputed, Took) {
    let tree = &ctx.cluster.tree;
    let node = ctx.cluster.cq(e.cq).node;
    let mut own: Recomputed = None;
    let mut held = e.held;
    let mut deferred = false;

    // Targets overlapping this cycle's earlier preemptions: recompute with those victims gone
    // (Kueue's `SimulateWorkloadRemoval`). Only this tree's victims change the quota this
    // entry's assignment reads; every victim's nodes are free once it is gone.
    let root = tree.root(node);
    if e.targets.iter().any(|t| preempted.contains(t.workload)) {
        let without = without_placements(ctx.cluster, tas, preempted.all.iter().copied());
        ctx.gone.borrow_mut().extend(preempted.all.iter().copied());
        ctx.some_gone.set(true);
        let (a, t) = asked_without(ctx.cluster, snapshot, preempted.in_tree(root), |others| {
            get_assignments(
                ctx,
                others,
                without.as_ref().unwrap_or(tas),
                e.workload,
                e.cq,
            )
        });
        ctx.some_gone.set(false);
        ctx.gone.borrow_mut().clear();
        deferred = a.mode() == AssignmentMode::Fit;
        held = t.held;
        own = Some(Box::new((a, t.targets)));
    }
    // A nomination whose placement no longer fits the leaves this cycle's earlier entries left
    // (a fit: on them as they are; a preemptor: once every victim of the cycle is gone) is
    // computed again on them (Kueue's `FitsCheckNoTAS` with
    // `TASRecomputeAssignmentWithinSchedulingCycle`, on by default).
    let stale = !deferred && {
        let (a, t) = current(e, &own);
        topology_stale(ctx, tas, preempted, e, a, t)
    };
    if stale {
        let (a, t) = get_assignments(ctx, snapshot, tas, e.workload, e.cq);
        held = t.held;
        own = Some(Box::new((a, t.targets)));
    }
    let (assignment, targets) = current(e, &own);
    let usage = assignment.usage.clone();
    let mode = assignment.mode();
    // A preemptor is checked as if this cycle's victims were gone (Kueue). A workload admitted
    // now is checked against the snapshot as it is: victims keep their quota until their
    // eviction completes, so the cluster is never over-committed, not even while evicting
    // (wasq differs from Kueue here on purpose).
    let fit = if mode == AssignmentMode::Preempt {
        let removed = removed(
            ctx.cluster,
            snapshot,
            preempted
                .in_tree(root)
                .chain(targets.iter().map(|t| t.workload)),
        );
        fits(ctx, &removed, e.cq, &usage)
    } else {
        fits(ctx, snapshot, e.cq, &usage)
    };

    // A flavor scan that stopped early is retried at once (Kueue's `PendingFlavors`).
    let retry = |reason| {
        if assignment.pending_flavors {
            RequeueReason::FailedAfterNomination
        } else {
            reason
        }
    };
    if mode == AssignmentMode::NoFit {
        let outcome = Outcome::Requeue {
            reason: retry(RequeueReason::NoFit),
            label: assignment.no_fit_reason(),
            message: Said::NoFit,
            wake: None,
        };
        return (outcome, own, None);
    }
    if mode == AssignmentMode::Preempt && targets.is_empty() && !deferred {
        reserve_for_unreclaimable(ctx, snapshot, tas, e.workload, e.cq, assignment);
        // Held by a preemption budget: parked like a preemptor without candidates, with the
        // budget's reason, and retried when the per-minute budget has refilled enough.
        let (label, message, wake) = match held {
            Some(h) => (
                super::budget::WAIT_REASON,
                Said::Text(h.message(ctx.cluster).into()),
                h.refill_at(),
            ),
            None => ("WaitingForQuota", Said::NoFit, None),
        };
        let outcome = Outcome::Requeue {
            reason: retry(RequeueReason::PreemptionNoCandidates),
            label,
            message,
            wake,
        };
        return (outcome, own, None);
    }
    if deferred {
        for &(fr, v) in &usage {
            tree.add_usage(snapshot, node, fr, v);
        }
        return (
            Outcome::Requeue {
                reason: RequeueReason::PendingPreemption,
                label: "WaitingForPreemptedWorkloads",
                message: Said::Text("Workload has overlapping preemption targets with another workload, but will fit after these preemptions complete".into()),
                wake: None,
            },
            own,
            Some(usage),
        );
    }
    if targets.iter().any(|t| preempted.contains(t.workload)) {
        return (
            Outcome::Requeue {
                reason: RequeueReason::FailedAfterNomination,
                label: "WaitingForQuota",
                message: Said::Text(
                    "Workload has overlapping preemption targets with another workload".into(),
                ),
                wake: None,
            },
            own,
            None,
        );
    }
    if !fit {
        return (
            Outcome::Requeue {
                reason: RequeueReason::FailedAfterNomination,
                label: "WaitingForQuota",
                message: Said::Text(
                    "Workload no longer fits after processing another workload".into(),
                ),
                wake: None,
            },
            own,
            None,
        );
    }
    // A TAS podSet is placed on the capacity this cycle's earlier admissions left.
    if mode == AssignmentMode::Fit && !ctx.cluster.tas.is_empty() {
        ctx.placed_by.take();
        match super::tas::place(
            Placer::Policy(ctx),
            tas,
            e.workload,
            e.cq,
            assignment,
            false,
        ) {
            Err(message) => {
                return (
                    Outcome::Requeue {
                        reason: RequeueReason::FailedAfterNomination,
                        label: super::tas::PLACEMENT_FAILED,
                        message: Said::Text(message.into()),
                        wake: None,
                    },
                    own,
                    None,
                );
            }
            Ok(placements) if placements.iter().any(Option::is_some) => {
                for p in placements.iter().flatten() {
                    ctx.cluster.tas.add_to_snapshot(tas, p);
                }
                let (mut placed, targets) = match own.take() {
                    Some(owned) => *owned,
                    None => (e.assignment.clone(), e.targets.clone()),
                };
                let tas = placed.tas_mut();
                tas.topology = placements;
                tas.placed_by = ctx.placed_by.take();
                own = Some(Box::new((placed, targets)));
            }
            Ok(_) => {}
        }
    }
    let (assignment, targets) = current(e, &own);
    // A preemptor's TAS podSets are placed on the capacity left once every victim of this
    // cycle (its own included) is gone, and reserve it so that entries processed after it
    // cannot take those leaves (Kueue's `fits` with the preempted workloads' usage removed,
    // then `AddUsage` of the preemptor's topology assignment).
    if mode == AssignmentMode::Preempt
        && let Some(check) = VictimFit::of(ctx.cluster, tas, e.workload, e.cq, assignment)
    {
        let gone = preempted
            .all
            .iter()
            .copied()
            .chain(targets.iter().map(|t| t.workload));
        match check.place_without(gone) {
            Err(_) => {
                return (
                    Outcome::Requeue {
                        reason: RequeueReason::FailedAfterNomination,
                        label: "WaitingForQuota",
                        message: Said::Text(
                            "Workload no longer fits after processing another workload".into(),
                        ),
                        wake: None,
                    },
                    own,
                    None,
                );
            }
            Ok(placements) => {
                for p in placements.iter().flatten() {
                    ctx.cluster.tas.add_to_snapshot(tas, p);
                }
            }
        }
    }
    preempted.extend(root, targets.iter().map(|t| t.workload));
    for &(fr, v) in &usage {
        tree.add_usage(snapshot, node, fr, v);
    }
    if mode == AssignmentMode::Preempt {
        return (Outcome::Preempting, own, Some(usage));
    }
    (Outcome::Admitted, own, Some(usage))
}

/// Whether `a`'s TAS podSets no longer have a placement on `tas` (see [`process`]).
fn topology_stale(
    ctx: &Ctx<'_>,
    tas: &TasUsage,
    preempted: &Preempted,
    e: &Entry,
    a: &Assignment,
    targets: &[Target],
) -> bool {
    let Some(check) = VictimFit::of(ctx.cluster, tas, e.workload, e.cq, a) else {
        return false;
    };
    match a.mode() {
        AssignmentMode::Fit => check.place_without([]).is_err(),
        AssignmentMode::Preempt if !targets.is_empty() => check
            .place_without(
                preempted
                    .all
                    .iter()
                    .copied()
                    .chain(targets.iter().map(|t| t.workload)),
            )
            .is_err(),
        _ => false,
    }
}

/// Kueue's `reserveCapacityForUnreclaimablePreempt`: a preemptor that found no victims keeps
/// lower entries of its cohort from taking the capacity it waits for, unless its queue can
/// always reclaim (`reclaimWithinCohort: Any`): quota, and the leaves of its placement on empty
/// capacity (Kueue's `updateAssignmentForTAS` without targets).
fn reserve_for_unreclaimable(
    ctx: &Ctx<'_>,
    snapshot: &mut Usage,
    tas: &mut TasUsage,
    wl: WorkloadId,
    cq: CqId,
    a: &Assignment,
) {
    let info = ctx.cluster.cq(cq);
    if info.preemption.reclaim_within_cohort == ReclaimWithinCohort::Any {
        return;
    }
    if !ctx.cluster.tas.is_empty()
        && let Ok(placements) =
            super::tas::place(Placer::BuiltIn(ctx.cluster), tas, wl, cq, a, true)
    {
        for p in placements.iter().flatten() {
            ctx.cluster.tas.add_to_snapshot(tas, p);
        }
    }
    let tree = &ctx.cluster.tree;
    for &(fr, v) in &a.usage {
        let quota = tree.quota(info.node, fr);
        let used = snapshot.get(info.node, fr);
        let reserve = if a.borrowing > 0 {
            match quota.borrowing_limit {
                None => v,
                Some(limit) => v.min(quota.nominal + limit - used).max(0),
            }
        } else {
            v.min(quota.nominal - used).max(0)
        };
        tree.add_usage(snapshot, info.node, fr, reserve);
    }
}

/// Admission fair sharing: an admission charges its LocalQueue Kueue's entry penalty.
fn charge_admission(s: &mut Scheduler, wl: WorkloadId, cq: CqId) {
    let Some(afs) = &s.cluster.settings.admission_fair_sharing else {
        return;
    };
    let (Some(lq), Some(a)) = (s.cluster.workload(wl).lq, s.cluster.admission(wl)) else {
        return;
    };
    if !s.cluster.cq(cq).admission_fair_sharing {
        return;
    }
    let names = &s.cluster.names;
    let requests: Vec<_> = a
        .usage
        .iter()
        .map(|&(fr, v)| (names.fr_parts(fr).1, v))
        .collect();
    let afs = afs.clone();
    s.cluster.lq_usage.add_penalty(lq, &requests, &afs);
}

fn to_admission(s: &Scheduler, e: &Entry) -> Admission {
    let info = s.cluster.workload(e.workload);
    Admission {
        cluster_queue: e.cq,
        pod_sets: e
            .assignment
            .pod_sets
            .iter()
            .enumerate()
            .map(|(i, ps)| PodSetAdmission {
                name: info.pod_sets[i].name.clone(),
                count: ps.count,
                flavors: ps.flavors.iter().map(|f| (f.resource, f.flavor)).collect(),
                topology: e.assignment.placement(i).cloned(),
            })
            .collect(),
        usage: e.assignment.usage.clone(),
    }
}
