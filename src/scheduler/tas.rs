//! Topology-aware scheduling in the cycle (Kueue's `tas_flavorassigner.go`): which flavors a
//! podSet may take (`checkPodSetAndFlavorMatchForTAS`), the placement of an assignment's
//! TAS podSets on the free capacity of their flavor's domain tree, verified by the host, and
//! the topology half of a preemptor's fit ([`VictimFit`]: preemption for topology).

use crate::cluster::matching::{NodeMismatch, node_mismatch};
use crate::cluster::{Cluster, CqId, FlavorInfo, PodSetInfo, WorkloadId};
use crate::policy::{FitMode, TopologyFit};
use crate::quota::{FlavorId, ResourceId};
use crate::topology::tree::{DomainTree, PODS};
use crate::topology::{
    Constraint, Exclusions, KueueBestFit, PlacementPolicy, PlacementRequest, PodSetPlacement,
    ResolveConstraint, TasUsage, verify,
};

use super::assign::{Assignment, AssignmentMode};
use super::placement::PodSetRef;
use super::preempt::Ctx;

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

/// Who places: the bound placement policy (a plugin's answer verified, the built-in after a
/// fallback), or Kueue's BestFit itself — for the host's own feasibility checks (victims,
/// reservations), which must not call plugins or count as their decisions.
#[derive(Clone, Copy)]
pub(super) enum Placer<'a, 'c> {
    Policy(&'a Ctx<'c>),
    BuiltIn(&'a Cluster),
}

impl<'a> Placer<'a, '_> {
    fn cluster(self) -> &'a Cluster {
        match self {
            Placer::Policy(ctx) => ctx.cluster,
            Placer::BuiltIn(cluster) => cluster,
        }
    }
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
        .as_deref()
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
    let has_level = Constraint::resolve(&f.tree, ps.topology.as_deref(), false, ps.count)
        .map_err(|e| e.starts_with("no requested topology level"))
        .err()
        != Some(true);
    (!has_level).then(|| format!("Flavor {name:?} does not contain the requested level"))
}

/// Places every TAS podSet of `assignment` on `usage` (on empty capacity with `empty`: could
/// it fit were every workload gone? Kueue's `simulateEmpty`, which still counts pods outside
/// TAS). Each podSet sees what the workload's earlier podSets took, on their flavor and on the
/// nodes it shares with theirs, so the workload is judged as a whole. `None` for podSets that
/// are not TAS. The error is the pending message, in Kueue's words.
pub(super) fn place(
    placer: Placer<'_, '_>,
    usage: &TasUsage,
    wl: WorkloadId,
    cq: CqId,
    assignment: &Assignment,
    empty: bool,
) -> Result<Vec<Option<PodSetPlacement>>, String> {
    let cluster = placer.cluster();
    let blank;
    let usage = if empty {
        blank = cluster.tas.unused();
        &blank
    } else {
        usage
    };
    let info = cluster.workload(wl);
    let mut out: Vec<Option<PodSetPlacement>> = vec![None; assignment.pod_sets.len()];
    // Kueue's `FindTopologyAssignmentsForFlavor`: TAS podSets by podSet group (on one flavor),
    // groups in the order of their first podSet; a podSet outside any group is its own.
    let tas_flavors = |psa: &super::assign::PodSetAssignment| -> Vec<FlavorId> {
        psa.flavors
            .iter()
            .map(|f| f.flavor)
            .filter(|&f| cluster.tas.get(f).is_some())
            .collect()
    };
    // Kueue's `resolvePodSetFlavors`: a podSet of a group that requests no resources (e.g. a
    // LeaderWorkerSet leader) takes its group's TAS flavor.
    let group_flavor = |group: &str| {
        assignment
            .pod_sets
            .iter()
            .zip(&info.pod_sets)
            .filter(|(_, ps)| group_of(ps) == Some(group))
            .find_map(|(psa, _)| tas_flavors(psa).first().copied())
    };
    let mut groups: Vec<(Option<&str>, FlavorId, Vec<usize>)> = Vec::new();
    for (i, (psa, ps)) in assignment.pod_sets.iter().zip(&info.pod_sets).enumerate() {
        let (tas, _) = requested(cluster, cq, ps);
        let group = group_of(ps);
        let mut flavors = tas_flavors(psa);
        if flavors.is_empty()
            && psa.flavors.is_empty()
            && let Some(f) = group.and_then(group_flavor)
        {
            flavors.push(f);
        }
        let Some(&flavor) = flavors.first().filter(|_| tas && psa.count > 0) else {
            continue;
        };
        if flavors.iter().any(|&f| f != flavor) {
            return Err(failed(ps, "multiple TAS flavors assigned".into()));
        }
        match groups
            .iter_mut()
            .find(|(g, f, _)| group.is_some() && *g == group && *f == flavor)
        {
            Some((_, _, members)) => members.push(i),
            None => groups.push((group, flavor, vec![i])),
        }
    }
    // The leaves one group takes are not free for the next: a copy of the usage, made only
    // when a further group follows.
    let mut local: Option<TasUsage> = None;
    let last = groups.len().saturating_sub(1);
    for (g, (_, flavor, members)) in groups.into_iter().enumerate() {
        let now = local.as_ref().unwrap_or(usage);
        // Kueue's `findLeaderAndWorkers`: of a group's first two podSets, the one with more
        // pods is the workers', the other the leader (one pod).
        let (workers, leader) = match members[..] {
            [w] => (w, None),
            [a, b, ..] if assignment.pod_sets[b].count > assignment.pod_sets[a].count => {
                (b, Some(a))
            }
            [a, b, ..] => (a, Some(b)),
            [] => continue,
        };
        let (ps, psa) = (&info.pod_sets[workers], &assignment.pod_sets[workers]);
        let implied = requested(cluster, cq, ps).1;
        let leader_ps = leader.map(|l| &info.pod_sets[l]);
        let of = PodSetRef {
            workload: wl,
            cluster_queue: cq,
            pod_set: workers,
            flavor,
        };
        let (placement, leader_placement) =
            place_pod_set(placer, now, ps, psa.count, leader_ps, of, implied)
                .map_err(|reason| failed(ps, reason))?;
        if g < last {
            let local = local.get_or_insert_with(|| usage.clone());
            cluster.tas.add_to_snapshot(local, &placement);
            if let Some(p) = &leader_placement {
                cluster.tas.add_to_snapshot(local, p);
            }
        }
        out[workers] = Some(placement);
        if let (Some(l), Some(p)) = (leader, leader_placement) {
            out[l] = Some(p);
        }
    }
    Ok(out)
}

/// The podSet group a podSet belongs to (`kueue.x-k8s.io/podset-group-name`).
fn group_of(ps: &PodSetInfo) -> Option<&str> {
    ps.topology
        .as_ref()
        .and_then(|t| t.pod_set_group_name.as_deref())
}

/// A podSet's placement failure, in Kueue's words.
fn failed(ps: &PodSetInfo, reason: String) -> String {
    format!("couldn't assign flavors to pod set {}: {reason}", ps.name)
}

/// One pod's request per column of `tree` (`pods` included), and a requested resource no node
/// declares.
fn one_pod(cluster: &Cluster, tree: &DomainTree, ps: &PodSetInfo) -> (Vec<i64>, Option<String>) {
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
    (per_pod, missing)
}

/// Places `count` pods of `ps` — with a podSet group's `leader` (one pod), in one request —
/// and returns the workers' placement and the leader's.
fn place_pod_set(
    placer: Placer<'_, '_>,
    usage: &TasUsage,
    ps: &PodSetInfo,
    count: i32,
    leader: Option<&PodSetInfo>,
    of: PodSetRef,
    implied: bool,
) -> Result<(PodSetPlacement, Option<PodSetPlacement>), String> {
    let (cluster, flavor) = (placer.cluster(), of.flavor);
    let f = cluster.tas.get(flavor).expect("a TAS flavor");
    let tree = &f.tree;
    let constraint = Constraint::resolve(tree, ps.topology.as_deref(), implied, count)?;
    let (per_pod, mut missing) = one_pod(cluster, tree, ps);
    let leader_per_pod = leader.map(|l| {
        let (p, m) = one_pod(cluster, tree, l);
        missing = missing.take().or(m);
        p
    });
    let free = cluster.tas.free(flavor, usage).expect("a TAS flavor");
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
        leader: leader_per_pod,
    };
    let answer = match placer {
        Placer::Policy(ctx) => {
            let answer = super::placement::decide(ctx, of, &request);
            // A podSet group's leader is placed by the same decision as its workers.
            if request.leader.is_some() {
                let mut by = ctx.placed_by.borrow_mut();
                if let Some(last) = by.last().cloned() {
                    by.push(last);
                }
            }
            answer?
        }
        Placer::BuiltIn(_) => {
            let answer = KueueBestFit.place(&request)?;
            verify(&request, &answer).map_err(|e| format!("placement refused: {e}"))?;
            answer
        }
    };
    let leader = answer
        .leader
        .zip(request.leader)
        .map(|(l, per_pod)| PodSetPlacement {
            flavor,
            leaves: vec![(l as u32, 1)],
            per_pod,
        });
    Ok((
        PodSetPlacement {
            flavor,
            leaves: answer
                .leaves
                .into_iter()
                .map(|(l, n)| (l as u32, n))
                .collect(),
            per_pod: request.per_pod,
        },
        leader,
    ))
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
    ctx: &Ctx<'_>,
    usage: &TasUsage,
    wl: WorkloadId,
    cq: CqId,
    mut a: Assignment,
) -> Assignment {
    let cluster = ctx.cluster;
    if cluster.tas.is_empty() {
        return a;
    }
    let now_failure = match a.mode() {
        AssignmentMode::Fit => match place(Placer::Policy(ctx), usage, wl, cq, &a, false) {
            Ok(_) => return a,
            Err(message) => Some(message),
        },
        AssignmentMode::Preempt => None,
        AssignmentMode::NoFit => return a,
    };
    match place(Placer::Policy(ctx), usage, wl, cq, &a, true) {
        Err(empty_failure) => {
            a.tas_mut().failed = Some(TopologyFailure {
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
            if now_failure.is_some() {
                a.tas_mut().pending = now_failure;
            }
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
            Placer::BuiltIn(self.cluster),
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
/// released: nodes are shared by every ClusterQueue with the flavor, or a flavor sharing its
/// nodes, whatever its cohort tree.
pub(super) fn sharing_nodes(cluster: &Cluster, admission: &crate::cluster::Admission) -> Vec<CqId> {
    // The flavors placed on, and every flavor sharing nodes with them.
    let flavors: Vec<FlavorId> = admission
        .pod_sets
        .iter()
        .filter_map(|ps| ps.topology.as_ref().map(|p| p.flavor))
        .flat_map(|f| cluster.tas.sharing_nodes_with(f))
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
