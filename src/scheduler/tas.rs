//! Topology-aware scheduling in the cycle (Kueue's `tas_flavorassigner.go`): which flavors a
//! podSet may take (`checkPodSetAndFlavorMatchForTAS`), and the placement of an assignment's
//! TAS podSets on the free capacity of their flavor's domain tree, verified by the host.

use crate::cluster::matching::{NodeMismatch, node_mismatch};
use crate::cluster::{Cluster, CqId, FlavorInfo, PodSetInfo, WorkloadId};
use crate::quota::{FlavorId, ResourceId};
use crate::topology::tree::PODS;
use crate::topology::{Constraint, Exclusions, PlacementRequest, PodSetPlacement, TasUsage};

use super::assign::{Assignment, AssignmentMode};
use super::placement::PodSetRef;
use super::preempt::Ctx;

/// The pending reason of a podSet no placement fits, not even on empty nodes (Kueue's
/// `TopologyPlacementFailed`).
pub const PLACEMENT_FAILED: &str = "TopologyPlacementFailed";
/// The pending reason when quota fits and the podSet would fit on empty nodes, but not on what
/// is free now (Kueue's case `QuotaFeasibleAndInsufficientTopology`: Kueue looks for victims,
/// wasq does not yet, so the workload waits as Kueue's does without candidates).
pub const WAITING_FOR_TOPOLOGY: &str = "WaitingForQuota";

/// Why an assignment's TAS podSets cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyFailure {
    pub message: String,
    /// [`PLACEMENT_FAILED`] or [`WAITING_FOR_TOPOLOGY`].
    pub label: &'static str,
}

/// Kueue's `IsTASOnly`: every flavor of the ClusterQueue is a TAS flavor.
fn tas_only(cluster: &Cluster, cq: CqId) -> bool {
    let mut flavors = cluster
        .cq(cq)
        .resource_groups
        .iter()
        .flat_map(|g| &g.flavors)
        .peekable();
    flavors.peek().is_some()
        && flavors.all(|f| {
            cluster
                .flavor(*f)
                .is_some_and(|i| i.topology_name.is_some())
        })
}

/// Whether a podSet asks for TAS explicitly, or implicitly in a TAS-only ClusterQueue.
fn requested(cluster: &Cluster, cq: CqId, ps: &PodSetInfo) -> (bool, bool) {
    let explicit = ps
        .topology
        .as_ref()
        .is_some_and(crate::api::topology::PodSetTopologyRequest::requests_tas);
    let implied = !explicit && tas_only(cluster, cq);
    (explicit || implied, implied)
}

/// Kueue's `checkPodSetAndFlavorMatchForTAS`: why `flavor` cannot serve `ps`'s resources
/// `group` for topology reasons.
pub(super) fn flavor_mismatch(
    cluster: &Cluster,
    cq: CqId,
    ps: &PodSetInfo,
    flavor: &FlavorInfo,
    group: &[(ResourceId, i64)],
) -> Option<String> {
    // The common case, decided without looking at the ClusterQueue: neither side is TAS.
    if flavor.topology_name.is_none() && ps.topology.is_none() {
        return None;
    }
    let (tas, implied) = requested(cluster, cq, ps);
    let name = &flavor.name;
    if !tas {
        return flavor
            .topology_name
            .is_some()
            .then(|| format!("Flavor {name:?} supports only TopologyAwareScheduling"));
    }
    if implied {
        return None;
    }
    if flavor.topology_name.is_none() {
        return (!group.is_empty())
            .then(|| format!("Flavor {name:?} does not support TopologyAwareScheduling"));
    }
    let Some(f) = cluster.tas.get(flavor.id) else {
        return Some(format!("Flavor {name:?} information missing in TAS cache"));
    };
    let has_level = Constraint::resolve(&f.tree, ps.topology.as_ref(), false, ps.count)
        .map_err(|e| e.starts_with("no requested topology level"))
        .err()
        != Some(true);
    (!has_level).then(|| format!("Flavor {name:?} does not contain the requested level"))
}

/// Places every TAS podSet of `assignment` on `usage` (on empty capacity with `empty`: could
/// it fit were every workload gone?). `None` for podSets that are not TAS. The error is the
/// pending message, in Kueue's words.
pub(super) fn place(
    ctx: &Ctx<'_>,
    usage: &TasUsage,
    wl: WorkloadId,
    cq: CqId,
    assignment: &Assignment,
    empty: bool,
) -> Result<Vec<Option<PodSetPlacement>>, String> {
    let cluster = ctx.cluster;
    let info = cluster.workload(wl);
    let mut out = Vec::with_capacity(assignment.pod_sets.len());
    let mut local: Option<TasUsage> = None;
    for (i, (psa, ps)) in assignment.pod_sets.iter().zip(&info.pod_sets).enumerate() {
        let (tas, implied) = requested(cluster, cq, ps);
        let flavors: Vec<FlavorId> = psa
            .flavors
            .iter()
            .map(|f| f.flavor)
            .filter(|&f| cluster.tas.get(f).is_some())
            .collect();
        let Some(&flavor) = flavors.first().filter(|_| tas && psa.count > 0) else {
            out.push(None);
            continue;
        };
        let fail =
            |reason: String| format!("couldn't assign flavors to pod set {}: {reason}", ps.name);
        if flavors.iter().any(|&f| f != flavor) {
            return Err(fail("multiple TAS flavors assigned".into()));
        }
        let now = local.as_ref().unwrap_or(usage);
        let of = PodSetRef {
            workload: wl,
            cluster_queue: cq,
            pod_set: i,
            flavor,
        };
        let placement = place_pod_set(ctx, now, ps, psa.count, of, implied, empty).map_err(fail)?;
        cluster
            .tas
            .add_to_snapshot(local.get_or_insert_with(|| usage.clone()), &placement);
        out.push(Some(placement));
    }
    Ok(out)
}

fn place_pod_set(
    ctx: &Ctx<'_>,
    usage: &TasUsage,
    ps: &PodSetInfo,
    count: i32,
    of: PodSetRef,
    implied: bool,
    empty: bool,
) -> Result<PodSetPlacement, String> {
    let (cluster, flavor) = (ctx.cluster, of.flavor);
    let f = cluster.tas.get(flavor).expect("a TAS flavor");
    let tree = &f.tree;
    let constraint = Constraint::resolve(tree, ps.topology.as_ref(), implied, count)?;
    let mut per_pod = vec![0; tree.resources.len()];
    let mut missing = None;
    for &(r, v) in &ps.requests {
        let name = cluster.names.resource_name(r);
        match tree.resource_index(name) {
            Some(c) => per_pod[c] += v,
            None if v > 0 => missing = Some(name.to_string()),
            None => {}
        }
    }
    if let Some(c) = tree.resource_index(PODS) {
        per_pod[c] += 1000;
    }
    let free = if empty {
        tree.capacity.clone()
    } else {
        cluster.tas.free(flavor, usage).expect("a TAS flavor")
    };
    let mut eligible = vec![true; tree.leaves.len()];
    let mut excluded = Exclusions::default();
    if tree.lowest_is_node() {
        for (i, node) in tree.nodes.iter().enumerate() {
            let Some(why) = node_mismatch(ps, &f.tolerations, &node.labels, &node.taints) else {
                continue;
            };
            eligible[i] = false;
            match why {
                NodeMismatch::Taint(t) => *excluded.taints.entry(t).or_default() += 1,
                NodeMismatch::NodeSelector => excluded.node_selector += 1,
                NodeMismatch::Affinity => excluded.affinity += 1,
            }
        }
    }
    let request = PlacementRequest {
        tree,
        free,
        per_pod,
        missing,
        eligible,
        excluded,
        count,
        constraint,
    };
    let answer = super::placement::decide(ctx, of, &request)?;
    Ok(PodSetPlacement {
        flavor,
        leaves: answer
            .leaves
            .into_iter()
            .map(|(l, n)| (l as u32, n))
            .collect(),
        per_pod: request.per_pod,
    })
}

/// Kueue's TAS step after flavor assignment: a quota fit also needs a placement on the free
/// capacity as it is, a fit by preemption one on empty capacity; without it the assignment
/// does not fit (`topology_failed`). wasq does not preempt for topology yet.
pub(super) fn screen(ctx: &Ctx<'_>, wl: WorkloadId, cq: CqId, mut a: Assignment) -> Assignment {
    let cluster = ctx.cluster;
    if cluster.tas.is_empty() {
        return a;
    }
    let empty = match a.mode() {
        AssignmentMode::Fit => false,
        AssignmentMode::Preempt => true,
        AssignmentMode::NoFit => return a,
    };
    if let Err(message) = place(ctx, cluster.tas.current(), wl, cq, &a, empty) {
        let fits_empty = !empty && place(ctx, cluster.tas.current(), wl, cq, &a, true).is_ok();
        a.topology_failed = Some(TopologyFailure {
            message,
            label: if fits_empty {
                WAITING_FOR_TOPOLOGY
            } else {
                PLACEMENT_FAILED
            },
        });
    }
    a
}

/// The ClusterQueues whose parked workloads may fit now that `admission`'s placements are
/// released: nodes are shared by every ClusterQueue with the flavor, whatever its cohort tree.
pub(super) fn sharing_nodes(cluster: &Cluster, admission: &crate::cluster::Admission) -> Vec<CqId> {
    let flavors: Vec<FlavorId> = admission
        .pod_sets
        .iter()
        .filter_map(|ps| ps.topology.as_ref().map(|p| p.flavor))
        .collect();
    if flavors.is_empty() {
        return Vec::new();
    }
    cluster
        .cluster_queues
        .iter()
        .filter(|cq| {
            cq.resource_groups
                .iter()
                .any(|g| g.flavors.iter().any(|f| flavors.contains(f)))
        })
        .map(|cq| cq.id)
        .collect()
}
