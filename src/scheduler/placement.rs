//! The placement decision on the host side: the bound placement policy answers, the host
//! checks the answer ([`crate::topology::verify`]) and falls back to Kueue's BestFit when the
//! policy fails or its answer is refused, counted like every other extension point.

use crate::cluster::{CqId, WorkloadId};
use crate::policy::verify::InvalidAnswer;
use crate::policy::{PlacementAnswer, PlacementChoiceRequest, PolicyError, PolicyRef, builtin};
use crate::quota::FlavorId;
use crate::topology::{Placement, PlacementRequest, verify};

use super::preempt::Ctx;

/// Which podSet a placement is for.
#[derive(Debug, Clone, Copy)]
pub(super) struct PodSetRef {
    pub workload: WorkloadId,
    pub cluster_queue: CqId,
    pub pod_set: usize,
    pub flavor: FlavorId,
}

/// Places one podSet with the ClusterQueue's placement policy: pods per leaf, or the pending
/// message (Kueue's words). The policy the decision is attributed to (the built-in after a
/// fallback) is added to `ctx.placed_by`.
pub(super) fn decide(
    ctx: &Ctx<'_>,
    of: PodSetRef,
    request: &PlacementRequest<'_>,
) -> Result<Placement, String> {
    let (answer, by) = decide_by(ctx, of, request);
    ctx.placed_by.borrow_mut().push(by);
    answer
}

fn decide_by(
    ctx: &Ctx<'_>,
    of: PodSetRef,
    request: &PlacementRequest<'_>,
) -> (Result<Placement, String>, PolicyRef) {
    let policy = &ctx.policies.placement;
    let id = policy.id();
    // Nothing to choose: zero pods and no leader, or a resource no node declares (part of the
    // WIT contract).
    if (request.count == 0 && request.leader.is_none()) || request.missing.is_some() {
        return (answer_of(request, builtin::best_fit(request)), id);
    }
    let choice = PlacementChoiceRequest {
        workload: of.workload,
        cluster_queue: of.cluster_queue,
        pod_set: of.pod_set,
        flavor: of.flavor,
        placement: request,
        cluster: ctx.cluster,
        now: ctx.now,
    };
    let span = tracing::debug_span!("policy", extension = "placement", plugin = %id.name);
    let answer = span
        .in_scope(|| policy.place(&choice))
        .and_then(|a| match a {
            PlacementAnswer::Placed(p) => verify(request, &p)
                .map(|()| PlacementAnswer::Placed(p))
                .map_err(|e| {
                    let e = PolicyError::Invalid(InvalidAnswer::Placement(e));
                    policy.refused(&e);
                    e
                }),
            PlacementAnswer::NoFit(m) if id == PolicyRef::builtin() => {
                Ok(PlacementAnswer::NoFit(m))
            }
            PlacementAnswer::NoFit(m) => Ok(PlacementAnswer::NoFit(with_exclusions(request, m))),
        });
    let decided = match answer {
        // Verified above.
        Ok(PlacementAnswer::Placed(p)) => (Ok(p), id),
        Ok(PlacementAnswer::NoFit(m)) => (Err(m), id),
        Err(e) => {
            ctx.fallback(id, "placement", e);
            (
                answer_of(request, builtin::best_fit(request)),
                PolicyRef::builtin(),
            )
        }
    };
    if !ctx.policies.shadows.placement.is_empty() {
        ctx.policies
            .shadows
            .placement(&choice, decided.0.as_ref().ok());
    }
    decided
}

/// The built-in's decision as the TAS step takes it, verified like any answer, so that no
/// unverified placement is ever admitted.
fn answer_of(request: &PlacementRequest<'_>, answer: PlacementAnswer) -> Result<Placement, String> {
    match answer {
        PlacementAnswer::Placed(p) => verify(request, &p)
            .map(|()| p)
            .map_err(|e| format!("placement refused: {e}")),
        PlacementAnswer::NoFit(m) => Err(m),
    }
}

/// A plugin's "no fit" message with Kueue's count of the nodes the host left out (the
/// built-in's message carries it already): by label or taint, and eligible nodes where not
/// one pod fits, by the first resource that limits them.
fn with_exclusions(request: &PlacementRequest<'_>, mut message: String) -> String {
    if let Some(e) = request.excluded_leaves().describe() {
        message.push_str(". ");
        message.push_str(&e);
    }
    message
}
