//! Topology-aware scheduling in the cycle (Kueue's `tas_flavorassigner.go`): which flavors a
//! podSet may take (`checkPodSetAndFlavorMatchForTAS`), the placement of an assignment's
//! TAS podSets on the free capacity of their flavor's domain tree, verified by the host, and
//! the topology half of a preemptor's fit ([`VictimFit`]: preemption for topology).

use crate::cluster::matching::{NodeMismatch, node_mismatch};
use crate::cluster::{Cluster, CqId, FlavorInfo, PodSetInfo, WorkloadId};
use crate::policy::{FitMode, TopologyFit};
use crate::quota::{FlavorId, ResourceId};
use crate::topology::tree::PODS;
use crate::topology::{
    Constraint, Exclusions, KueueBestFit, PlacementPolicy, PlacementRequest, PodSetPlacement,
    TasUsage, verify,
};

use super::assign::{Assignment, AssignmentMode};

/// The pending reason of a podSet no placement fits, not even on empty nodes (Kueue's
/// `TopologyPlacementFailed`).
pub const PLACEMENT_FAILED: &str = "TopologyPlacementFailed";

/// Why an assignment's TAS podSets cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyFailure {
    pub message: String,
    /// [`PLACEMENT_FAILED`].
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
    cluster: &Cluster,
    usage: &TasUsage,
    wl: WorkloadId,
    cq: CqId,
    assignment: &Assignment,
    empty: bool,
) -> Result<Vec<Option<PodSetPlacement>>, String> {
    let info = cluster.workload(wl);
    let mut out = Vec::with_capacity(assignment.pod_sets.len());
    let mut local: Option<TasUsage> = None;
    for (psa, ps) in assignment.pod_sets.iter().zip(&info.pod_sets) {
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
        let placement =
            place_pod_set(cluster, now, ps, psa.count, flavor, implied, empty).map_err(fail)?;
        cluster
            .tas
            .add_to_snapshot(local.get_or_insert_with(|| usage.clone()), &placement);
        out.push(Some(placement));
    }
    Ok(out)
}

fn place_pod_set(
    cluster: &Cluster,
    usage: &TasUsage,
    ps: &PodSetInfo,
    count: i32,
    flavor: FlavorId,
    implied: bool,
    empty: bool,
) -> Result<PodSetPlacement, String> {
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
        leader: None,
    };
    let answer = KueueBestFit.place(&request)?;
    verify(&request, &answer).map_err(|e| format!("placement refused: {e}"))?;
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

/// Kueue's TAS step after flavor assignment (`flavorassigner.go`, after quota): a quota fit
/// also needs a placement on the free capacity as it is. Without one, the podSet needs
/// preemption (Kueue's `QuotaFeasibleAndInsufficientTopology`: its flavors turn `Preempt`, the
/// placement's failure is its reason). A preemptor — by quota or by topology — needs a
/// placement on empty capacity, else nothing can help (`topology_failed`,
/// [`PLACEMENT_FAILED`]); with one, every TAS podSet's flavors turn `Preempt`, since victims
/// may be needed where unused quota suffices but leaves are fragmented (Kueue's
/// `updateModeForTASRequests`). `usage` is the leaf usage of the cycle's snapshot.
pub(super) fn screen(
    cluster: &Cluster,
    usage: &TasUsage,
    wl: WorkloadId,
    cq: CqId,
    mut a: Assignment,
) -> Assignment {
    if cluster.tas.is_empty() {
        return a;
    }
    let now_failure = match a.mode() {
        AssignmentMode::Fit => match place(cluster, usage, wl, cq, &a, false) {
            Ok(_) => return a,
            Err(message) => Some(message),
        },
        AssignmentMode::Preempt => None,
        AssignmentMode::NoFit => return a,
    };
    match place(cluster, usage, wl, cq, &a, true) {
        Err(empty_failure) => {
            a.topology_failed = Some(TopologyFailure {
                message: now_failure.unwrap_or(empty_failure),
                label: PLACEMENT_FAILED,
            });
        }
        Ok(placements) => {
            for (psa, p) in a.pod_sets.iter_mut().zip(&placements) {
                if p.is_none() {
                    continue;
                }
                for f in &mut psa.flavors {
                    if f.mode == FitMode::Fit {
                        f.mode = FitMode::Preempt;
                    }
                }
            }
            a.topology_pending = now_failure;
        }
    }
    a
}

/// Whether `a` places some podSet on a TAS flavor.
fn has_tas_pod_sets(cluster: &Cluster, wl: WorkloadId, cq: CqId, a: &Assignment) -> bool {
    !cluster.tas.is_empty()
        && a.pod_sets
            .iter()
            .zip(&cluster.workload(wl).pod_sets)
            .any(|(psa, ps)| {
                psa.count > 0
                    && requested(cluster, cq, ps).0
                    && psa
                        .flavors
                        .iter()
                        .any(|f| cluster.tas.get(f.flavor).is_some())
            })
}

/// The topology half of a preemptor's fit (Kueue's `workloadFits` → `FindTopologyAssignments
/// ForWorkload` on the snapshot without the victims): its TAS podSets placed on `usage` with
/// the victims' placements taken out. Handed to the preemption policy with the request, so
/// whatever policy chooses, the host verifies that the victims free the leaves the placement
/// needs.
pub(super) struct VictimFit<'a> {
    cluster: &'a Cluster,
    usage: &'a TasUsage,
    wl: WorkloadId,
    cq: CqId,
    assignment: &'a Assignment,
}

impl<'a> VictimFit<'a> {
    /// The check for `a`, or `None` when it has no TAS podSet.
    pub(super) fn of(
        cluster: &'a Cluster,
        usage: &'a TasUsage,
        wl: WorkloadId,
        cq: CqId,
        assignment: &'a Assignment,
    ) -> Option<VictimFit<'a>> {
        has_tas_pod_sets(cluster, wl, cq, assignment).then_some(VictimFit {
            cluster,
            usage,
            wl,
            cq,
            assignment,
        })
    }

    /// The placements once `victims` are gone, or why there is none.
    pub(super) fn place_without(
        &self,
        victims: impl IntoIterator<Item = WorkloadId>,
    ) -> Result<Vec<Option<PodSetPlacement>>, String> {
        let mut usage = self.usage.clone();
        for id in victims {
            for p in self
                .cluster
                .admission(id)
                .into_iter()
                .flat_map(|a| &a.pod_sets)
                .filter_map(|ps| ps.topology.as_ref())
            {
                self.cluster.tas.remove_from_snapshot(&mut usage, p);
            }
        }
        place(
            self.cluster,
            &usage,
            self.wl,
            self.cq,
            self.assignment,
            false,
        )
    }
}

impl std::fmt::Debug for VictimFit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VictimFit")
            .field("workload", &self.wl)
            .field("cluster_queue", &self.cq)
            .finish_non_exhaustive()
    }
}

impl TopologyFit for VictimFit<'_> {
    fn fits_without(&self, victims: &[WorkloadId]) -> bool {
        self.place_without(victims.iter().copied()).is_ok()
    }
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
