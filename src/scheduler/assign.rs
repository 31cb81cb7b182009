//! Flavor assignment (Kueue's `flavorassigner`): for each podSet and resource group, evaluate
//! every flavor of the ClusterQueue against the quota snapshot, then let the flavor policy choose.
//! Also partial admission (Kueue's `PodSetReducer`).

use smallvec::SmallVec;

use crate::cluster::{CqId, WorkloadId};
use crate::policy::builtin::{is_preferred, should_try_next_flavor};
use crate::policy::{FitMode, FlavorChoiceRequest, FlavorOption, PolicyError, PolicyRef, verify};
use crate::quota::{FlavorId, FrAmounts, FrIdx, Names, ResourceId, Usage, add_amount, amount_of};

use super::preempt::{Ctx, simulate};

/// The representative outcome of an assignment, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AssignmentMode {
    NoFit,
    Preempt,
    Fit,
}

impl From<FitMode> for AssignmentMode {
    fn from(m: FitMode) -> Self {
        match m {
            FitMode::NoFit => AssignmentMode::NoFit,
            FitMode::NoPreemptionCandidates | FitMode::Preempt | FitMode::Reclaim => {
                AssignmentMode::Preempt
            }
            FitMode::Fit => AssignmentMode::Fit,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlavorAssigned {
    pub resource: ResourceId,
    pub flavor: FlavorId,
    pub mode: FitMode,
    pub borrow: u32,
}

/// Why a flavor could not take a podSet, kept as values and put into words only when a
/// message or a flavor policy's options need them (Kueue's wording).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NoFitReason {
    /// The ClusterQueue covers no flavor for the resource.
    ResourceUnavailable(ResourceId),
    FlavorNotFound(FlavorId),
    /// Taints, node affinity or topology: the flavor cannot host the podSet at all.
    Mismatch(String),
    /// More than the flavor-resource could ever hold.
    OverCapacity {
        fr: FrIdx,
        assumed: i64,
        request: i64,
        max: i64,
    },
    /// More than is unused now.
    Insufficient {
        fr: FrIdx,
        more: i64,
    },
}

impl NoFitReason {
    /// Appends the reason in words.
    pub fn write(&self, names: &Names, out: &mut String) {
        use crate::api::Quantity;
        use std::fmt::Write as _;
        let fr_names = |fr: FrIdx| {
            let (f, r) = names.fr_parts(fr);
            (names.resource_name(r), names.flavor_name(f))
        };
        let _ = match self {
            NoFitReason::ResourceUnavailable(r) => write!(
                out,
                "resource {} unavailable in ClusterQueue",
                names.resource_name(*r)
            ),
            NoFitReason::FlavorNotFound(f) => {
                write!(out, "flavor {} not found", names.flavor_name(*f))
            }
            NoFitReason::Mismatch(m) => write!(out, "{m}"),
            &NoFitReason::OverCapacity {
                fr,
                assumed,
                request,
                max,
            } => {
                let (rname, fname) = fr_names(fr);
                write!(
                    out,
                    "insufficient quota for {rname} in flavor {fname}, previously considered podsets requests ({}) + current podset request ({}) > maximum capacity ({})",
                    Quantity(assumed),
                    Quantity(request),
                    Quantity(max)
                )
            }
            &NoFitReason::Insufficient { fr, more } => {
                let (rname, fname) = fr_names(fr);
                write!(
                    out,
                    "insufficient unused quota for {rname} in flavor {fname}, {} more needed",
                    Quantity(more)
                )
            }
        };
    }

    pub fn to_string(&self, names: &Names) -> String {
        let mut out = String::new();
        self.write(names, &mut out);
        out
    }
}

/// A few reasons, inline.
pub type Reasons = SmallVec<[NoFitReason; 2]>;

/// Kueue's reasons for a flavor that cannot take a podSet, and for a workload no flavor takes
/// (`QuotaReserved=False`, UnadmittedWorkloadsObservability, on by default): least severe
/// first (Kueue's `reasonSeverity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NoFitTier {
    TopologyPlacementFailed,
    WaitingForQuota,
    ExceedsMaxQuota,
    NoMatchingFlavor,
}

impl NoFitTier {
    /// The condition's reason.
    pub fn reason(self) -> &'static str {
        match self {
            NoFitTier::TopologyPlacementFailed => super::tas::PLACEMENT_FAILED,
            NoFitTier::WaitingForQuota => "WaitingForQuota",
            NoFitTier::ExceedsMaxQuota => "ExceedsMaxQuota",
            NoFitTier::NoMatchingFlavor => "NoMatchingFlavor",
        }
    }
}

/// One podSet's flavors; the podSet is the workload's podSet at the same index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSetAssignment {
    pub count: i32,
    pub flavors: SmallVec<[FlavorAssigned; 4]>,
    /// Set when some requested resource got no flavor.
    pub failed: bool,
    pub reasons: Reasons,
    /// Kueue's reason for the flavors tried that could not take the podSet
    /// (`FlavorAssignmentAttempts` with mode NoFit): per resource group the least severe of its
    /// flavors', the most severe over groups; `None` when no flavor was tried.
    pub no_fit: Option<NoFitTier>,
}

impl PodSetAssignment {
    pub fn mode(&self) -> AssignmentMode {
        if self.failed {
            return AssignmentMode::NoFit;
        }
        self.flavors
            .iter()
            .map(|f| AssignmentMode::from(f.mode))
            .min()
            .unwrap_or(AssignmentMode::Fit)
    }
}

/// Flavor-resources of one assignment (inline).
pub type FrList = SmallVec<[FrIdx; 4]>;

#[derive(Debug, Clone)]
pub struct Assignment {
    /// Per podSet of the workload, in order (inline for a one-podSet workload).
    pub pod_sets: SmallVec<[PodSetAssignment; 1]>,
    /// Total usage per flavor-resource, sorted by flavor-resource.
    pub usage: FrAmounts,
    /// Highest borrowing level of any flavor (0 = within nominal).
    pub borrowing: u32,
    /// Whether every podSet was assigned (a failure stops at the failing podSet).
    pub complete: bool,
    /// Some flavor scan stopped before the group's last flavor (Kueue's `PendingFlavors`).
    pub pending_flavors: bool,
    pub policy: PolicyRef,
    /// What topology-aware scheduling found, for an assignment with TAS podSets only. Boxed:
    /// every head of a cycle carries an assignment (in its entry, 10,000 of them at ten times
    /// Kueue's large scale), and most have no TAS podSet.
    pub tas: Option<Box<TasOutcome>>,
}

/// The topology-aware part of an [`Assignment`].
#[derive(Debug, Clone, Default)]
pub struct TasOutcome {
    /// Per podSet, where its pods go on a TAS flavor (set when it is admitted).
    pub topology: Vec<Option<crate::topology::PodSetPlacement>>,
    /// No placement satisfies a TAS podSet now: why, and the pending reason.
    pub failed: Option<super::tas::TopologyFailure>,
    /// Quota fits but no placement fits the free capacity (one fits empty capacity): the
    /// placement's failure, in Kueue's words; the TAS podSets need preemption.
    pub pending: Option<String>,
    /// The placement policy that placed each TAS podSet of `topology`, in order (set with it).
    pub placed_by: Vec<PolicyRef>,
}

impl Assignment {
    /// The topology-aware part, made empty on first use.
    pub fn tas_mut(&mut self) -> &mut TasOutcome {
        self.tas.get_or_insert_with(Default::default)
    }

    /// Why no placement satisfies a TAS podSet now, if so.
    pub fn topology_failed(&self) -> Option<&super::tas::TopologyFailure> {
        self.tas.as_ref()?.failed.as_ref()
    }

    /// The placement's failure on the free capacity when one fits empty capacity, if so.
    pub fn topology_pending(&self) -> Option<&str> {
        self.tas.as_ref()?.pending.as_deref()
    }

    /// Where podSet `i`'s pods go on a TAS flavor, if placed.
    pub fn placement(&self, i: usize) -> Option<&crate::topology::PodSetPlacement> {
        self.tas.as_ref()?.topology.get(i)?.as_ref()
    }

    pub fn mode(&self) -> AssignmentMode {
        if !self.complete || self.topology_failed().is_some() {
            return AssignmentMode::NoFit;
        }
        self.pod_sets
            .iter()
            .map(PodSetAssignment::mode)
            .min()
            .unwrap_or(AssignmentMode::Fit)
    }

    /// Kueue's `resolveNoFitReason`: the most severe reason of the podSets no flavor takes (a
    /// podSet with no flavor tried: `NoMatchingFlavor`). A placement that fits no empty
    /// capacity is `TopologyPlacementFailed`.
    pub fn no_fit_reason(&self) -> &'static str {
        if let Some(f) = self.topology_failed() {
            return f.label;
        }
        self.pod_sets
            .iter()
            .filter(|p| p.mode() == AssignmentMode::NoFit)
            .map(|p| p.no_fit.unwrap_or(NoFitTier::NoMatchingFlavor))
            .max()
            .unwrap_or(NoFitTier::NoMatchingFlavor)
            .reason()
    }

    /// Flavor-resources whose mode needs preemption.
    pub(super) fn needs_preemption(&self, ctx: &Ctx<'_>) -> FrList {
        let mut out: FrList = self
            .pod_sets
            .iter()
            .flat_map(|ps| &ps.flavors)
            .filter(|f| AssignmentMode::from(f.mode) == AssignmentMode::Preempt)
            .filter_map(|f| ctx.cluster.names.find_fr(f.flavor, f.resource))
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// One flavor's evaluation: its mode over the group, the per-resource modes, and why it does
/// not fit outright.
struct Evaluated {
    flavor: FlavorId,
    mode: FitMode,
    borrow_level: u32,
    reasons: Reasons,
    per_resource: SmallVec<[(ResourceId, FitMode, u32); 4]>,
}

impl Evaluated {
    /// Kueue's `flavorNoFitReason` of a flavor that cannot take the podSet: the most severe of
    /// its resources' (more than it could ever hold: `ExceedsMaxQuota`; not enough now, and no
    /// preemption helps: `WaitingForQuota`; a resource it lacks: `NoMatchingFlavor`).
    fn no_fit_tier(&self) -> NoFitTier {
        self.reasons
            .iter()
            .map(|r| match r {
                NoFitReason::OverCapacity { .. } => NoFitTier::ExceedsMaxQuota,
                NoFitReason::Insufficient { .. } => NoFitTier::WaitingForQuota,
                _ => NoFitTier::NoMatchingFlavor,
            })
            .max()
            .unwrap_or(NoFitTier::NoMatchingFlavor)
    }

    /// The option as a flavor policy sees it.
    fn option(&self, names: &Names) -> FlavorOption {
        FlavorOption {
            flavor: self.flavor,
            mode: self.mode,
            borrow_level: self.borrow_level,
            reasons: self.reasons.iter().map(|r| r.to_string(names)).collect(),
        }
    }
}

/// Kueue's `fitsResourceQuota`.
fn fits_resource_quota(
    ctx: &Ctx<'_>,
    usage: &Usage,
    wl: WorkloadId,
    cq: CqId,
    fr: FrIdx,
    assumed: i64,
    request: i64,
) -> (FitMode, u32, Option<NoFitReason>) {
    let cluster = ctx.cluster;
    let tree = &cluster.tree;
    let info = cluster.cq(cq);
    let node = info.node;
    let val = assumed + request;
    let max = tree.potential_available(node, fr);
    if val > max {
        return (
            FitMode::NoFit,
            0,
            Some(NoFitReason::OverCapacity {
                fr,
                assumed,
                request,
                max,
            }),
        );
    }
    let (borrow, may_reclaim) = tree.borrow_level(usage, node, fr, val);
    let available = tree.available(usage, node, fr);
    if val <= available {
        return (FitMode::Fit, borrow, None);
    }
    let reason = NoFitReason::Insufficient {
        fr,
        more: val - available,
    };
    // Kueue's `canPreemptWhileBorrowing`: borrowWithinCohort allows it, or fair sharing with
    // reclaimWithinCohort set.
    let can_preempt_while_borrowing = info.preemption.borrow_within_cohort
        != crate::api::BorrowWithinCohortPolicy::Never
        || (ctx.cluster.settings.fair_sharing_enabled()
            && info.preemption.reclaim_within_cohort != crate::api::ReclaimWithinCohort::Never);
    if tree.quota(node, fr).nominal >= val || may_reclaim || can_preempt_while_borrowing {
        let (mode, borrow) = simulate(ctx, usage, wl, cq, fr, val);
        return (mode, borrow, Some(reason));
    }
    (FitMode::NoFit, borrow, Some(reason))
}

/// Assigns flavors to every podSet with the given counts (`None` = full counts).
pub(super) fn assign_flavors(
    ctx: &Ctx<'_>,
    usage: &Usage,
    wl_id: WorkloadId,
    cq_id: CqId,
    counts: Option<&[i32]>,
) -> Assignment {
    let cluster = ctx.cluster;
    let names = &cluster.names;
    let wl = cluster.workload(wl_id);
    let cq = cluster.cq(cq_id);
    let policy = &ctx.policies.flavors;
    let mut assignment = Assignment {
        pod_sets: SmallVec::with_capacity(wl.pod_sets.len()),
        usage: FrAmounts::new(),
        borrowing: 0,
        complete: true,
        pending_flavors: false,
        policy: policy.id(),
        tas: None,
    };
    let pods = names.pods();
    for (i, ps) in wl.pod_sets.iter().enumerate() {
        let count = counts.map_or(ps.count, |c| c[i]);
        // The podSet's total requests (`Cluster::pod_set_total`), inline.
        let mut requests: SmallVec<[(ResourceId, i64); 4]> = ps
            .requests
            .iter()
            .map(|&(r, v)| (r, v.saturating_mul(i64::from(count))))
            .collect();
        if let Some(pods) = pods
            && cq.group_of(pods).is_some()
            && !requests.iter().any(|(r, _)| *r == pods)
        {
            requests.push((pods, i64::from(count) * 1000));
        }
        // Resource name order, for deterministic messages.
        requests.sort_by(|a, b| names.resource_name(a.0).cmp(names.resource_name(b.0)));
        let mut psa = PodSetAssignment {
            count,
            flavors: SmallVec::new(),
            failed: false,
            reasons: Reasons::new(),
            no_fit: None,
        };
        for &(res, qty) in &requests {
            if psa.flavors.iter().any(|f| f.resource == res) {
                continue;
            }
            let Some(rg_index) = cq.group_of(res) else {
                if qty == 0 {
                    continue;
                }
                psa.failed = true;
                psa.reasons.push(NoFitReason::ResourceUnavailable(res));
                break;
            };
            let rg = &cq.resource_groups[rg_index];
            let group: SmallVec<[(ResourceId, i64); 4]> = requests
                .iter()
                .filter(|(r, _)| rg.covered.contains(r))
                .copied()
                .collect();
            let evaluated: SmallVec<[Option<Evaluated>; 2]> = rg
                .flavors
                .iter()
                .map(|&flavor| {
                    evaluate_flavor(
                        ctx,
                        usage,
                        wl_id,
                        cq_id,
                        i,
                        flavor,
                        &group,
                        &assignment,
                        &mut psa,
                    )
                })
                .collect();
            // Kueue's `resolveNoFitReason` for this group: the least severe reason of its
            // flavors that cannot take the podSet (a flavor that does not match at all:
            // `NoMatchingFlavor`), folded into the podSet's as the most severe over groups.
            let group_tier = evaluated
                .iter()
                .filter_map(|e| match e {
                    None => Some(NoFitTier::NoMatchingFlavor),
                    Some(e) if e.mode == FitMode::NoFit => Some(e.no_fit_tier()),
                    Some(_) => None,
                })
                .min();
            psa.no_fit = psa.no_fit.max(group_tier);
            // Nothing to choose when at most one flavor can host the podSet: the host applies
            // it (as Kueue's scan would) without a call, and without building the request.
            // Part of the WIT contract.
            let mut hosts = evaluated.iter().enumerate().filter(|(_, o)| o.is_some());
            let only = match (hosts.next(), hosts.next()) {
                (None, _) => Some(None),
                (Some((i, Some(o))), None) => Some((o.mode != FitMode::NoFit).then_some(i)),
                _ => None,
            };
            let choice = match only {
                Some(choice) => choice,
                None => {
                    let request = FlavorChoiceRequest {
                        workload: wl_id,
                        cluster_queue: cq_id,
                        pod_set: i,
                        requests: group.to_vec(),
                        options: evaluated
                            .iter()
                            .map(|e| e.as_ref().map(|e| e.option(names)))
                            .collect(),
                        fungibility: cq.fungibility,
                        cluster,
                        now: ctx.now,
                    };
                    let span = tracing::debug_span!("policy", extension = "flavor-assignment", plugin = %policy.id().name);
                    let answer =
                        span.in_scope(|| policy.choose_flavor(&request))
                            .and_then(|choice| match choice {
                                Some(c) => verify::flavor_choice(&request, c)
                                    .map(|()| Some(c))
                                    .map_err(|e| {
                                        let e = PolicyError::Invalid(e);
                                        policy.refused(&e);
                                        e
                                    }),
                                None => Ok(None),
                            });
                    let choice = match answer {
                        Ok(choice) => choice,
                        Err(e) => {
                            ctx.fallback(policy.id(), "flavor-assignment", e);
                            assignment.policy = PolicyRef::builtin();
                            crate::policy::builtin::choose_flavor(&request)
                        }
                    };
                    if !ctx.policies.shadows.flavors.is_empty() {
                        ctx.policies.shadows.flavor(&request, choice);
                    }
                    choice
                }
            };
            let Some(chosen) = choice.and_then(|c| evaluated[c].as_ref()) else {
                psa.failed = true;
                break;
            };
            if chosen.mode == FitMode::NoFit {
                psa.failed = true;
                break;
            }
            let chosen_mode = (chosen.mode, chosen.borrow_level);
            if choice.is_some_and(|c| c + 1 < rg.flavors.len())
                && !should_try_next_flavor(chosen_mode, &cq.fungibility)
            {
                assignment.pending_flavors = true;
            }
            for &(resource, mode, borrow) in &chosen.per_resource {
                psa.flavors.push(FlavorAssigned {
                    resource,
                    flavor: chosen.flavor,
                    mode,
                    borrow,
                });
            }
        }
        // Account this podSet's usage so later podSets see it.
        for f in &psa.flavors {
            assignment.borrowing = assignment.borrowing.max(f.borrow);
            if let Some(fr) = names.find_fr(f.flavor, f.resource) {
                let amount = requests
                    .iter()
                    .find(|(r, _)| *r == f.resource)
                    .map_or(0, |&(_, v)| v);
                add_amount(&mut assignment.usage, fr, amount);
            }
        }
        psa.flavors.sort_by_key(|f| f.resource);
        let failed = psa.failed;
        assignment.pod_sets.push(psa);
        if failed {
            assignment.complete = false;
            return assignment;
        }
    }
    assignment
}

#[allow(clippy::too_many_arguments)]
fn evaluate_flavor(
    ctx: &Ctx<'_>,
    usage: &Usage,
    wl_id: WorkloadId,
    cq_id: CqId,
    pod_set: usize,
    flavor: FlavorId,
    group: &[(ResourceId, i64)],
    assignment: &Assignment,
    psa: &mut PodSetAssignment,
) -> Option<Evaluated> {
    let cluster = ctx.cluster;
    let fungibility = cluster.cq(cq_id).fungibility;
    let Some(info) = cluster.flavor(flavor) else {
        psa.reasons.push(NoFitReason::FlavorNotFound(flavor));
        return None;
    };
    let ps = &cluster.workload(wl_id).pod_sets[pod_set];
    if let Some(reason) = crate::cluster::matching::flavor_mismatch(info, ps)
        .or_else(|| super::tas::flavor_mismatch(cluster, cq_id, ps, info, group))
    {
        psa.reasons.push(NoFitReason::Mismatch(reason));
        return None;
    }
    let mut rep = (FitMode::Fit, 0u32);
    let mut per_resource = SmallVec::new();
    let mut reasons = Reasons::new();
    for &(res, val) in group {
        let Some(fr) = cluster.names.find_fr(flavor, res) else {
            rep = (FitMode::NoFit, 0);
            break;
        };
        let assumed = amount_of(&assignment.usage, fr);
        let (mode, borrow, reason) =
            fits_resource_quota(ctx, usage, wl_id, cq_id, fr, assumed, val);
        if let Some(r) = reason {
            reasons.push(r);
        }
        if is_preferred(rep, (mode, borrow), &fungibility) {
            rep = (mode, borrow);
        }
        if rep.0 == FitMode::NoFit {
            continue;
        }
        per_resource.push((res, mode, borrow));
    }
    psa.reasons.extend(reasons.iter().cloned());
    Some(Evaluated {
        flavor,
        mode: rep.0,
        borrow_level: rep.1,
        reasons,
        per_resource,
    })
}

/// Kueue's `PodSetReducer.Search`: the largest counts between full and `minCount` for which
/// `fits` succeeds, by binary search over the reduction index.
pub(super) fn reduce_pod_sets<R>(
    full: &[i32],
    min: &[i32],
    mut fits: impl FnMut(&[i32]) -> Option<R>,
) -> Option<R> {
    let deltas: Vec<i64> = full
        .iter()
        .zip(min)
        .map(|(&f, &m)| i64::from(f - m))
        .collect();
    let total: i64 = deltas.iter().sum();
    if total == 0 {
        return None;
    }
    let counts_at = |i: i64| -> Vec<i32> {
        full.iter()
            .zip(&deltas)
            .map(|(&f, &d)| f - (d * i / total) as i32)
            .collect()
    };
    // Smallest index in 0..=total that fits (fits is monotone in the reduction).
    let (mut lo, mut hi) = (0i64, total + 1);
    let mut found = None;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match fits(&counts_at(mid)) {
            Some(r) => {
                found = Some(r);
                hi = mid;
            }
            None => lo = mid + 1,
        }
    }
    found
}
