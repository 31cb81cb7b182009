//! ClusterQueue, LocalQueue and Cohort status as Kueue reports it: pending / reserving /
//! admitted counts, `flavorsReservation`, `flavorsUsage`, the `Active` condition and, under fair
//! sharing, the weighted share, computed from the scheduler's state.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::{Condition, Quantity};
use crate::cluster::{Cluster, CqId, Millis};
use crate::scheduler::Scheduler;

use crate::k8s::status::conditions;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flavors_reservation: Vec<FlavorUsage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flavors_usage: Vec<FlavorUsage>,
    #[serde(default)]
    pub pending_workloads: i32,
    #[serde(default)]
    pub reserving_workloads: i32,
    #[serde(default)]
    pub admitted_workloads: i32,
    /// Under fair sharing: the queue's weighted dominant resource share (null otherwise).
    // Serialized even when None: the controller's merge patch must remove an old share.
    #[serde(default)]
    pub fair_sharing: Option<FairSharingStatus>,
}

/// Kueue's `status.fairSharing` of a ClusterQueue or Cohort.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FairSharingStatus {
    /// The weighted dominant resource share, rounded up (`i64::MAX` for a zero weight that
    /// borrows).
    pub weighted_share: i64,
}

/// Kueue's `status` of a Cohort: its weighted share under fair sharing, nothing otherwise.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CohortStatus {
    /// Under fair sharing: the Cohort's weighted dominant resource share (null otherwise).
    // Serialized even when None, as for a ClusterQueue.
    #[serde(default)]
    pub fair_sharing: Option<FairSharingStatus>,
}

/// The status of the Cohort at quota-tree node `node`.
pub fn cohort_status(cluster: &Cluster, node: crate::quota::NodeId) -> CohortStatus {
    CohortStatus {
        fair_sharing: weighted_share(cluster, node),
    }
}

/// Kueue's `status.fairSharing` of a LocalQueue under admission fair sharing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueFairSharingStatus {
    pub admission_fair_sharing_status: AdmissionFairSharingStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionFairSharingStatus {
    /// Decayed consumed resources, by resource name.
    pub consumed_resources: BTreeMap<String, Quantity>,
    /// When they were last sampled (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlavorUsage {
    pub name: String,
    pub resources: Vec<ResourceUsage>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUsage {
    pub name: String,
    pub total: Quantity,
    /// Only ClusterQueues report borrowing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub borrowed: Option<Quantity>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default)]
    pub pending_workloads: i32,
    #[serde(default)]
    pub reserving_workloads: i32,
    #[serde(default)]
    pub admitted_workloads: i32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flavors_reservation: Vec<FlavorUsage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flavors_usage: Vec<FlavorUsage>,
    /// Under admission fair sharing: the LocalQueue's consumed resources (null otherwise).
    // Serialized even when None, as for a ClusterQueue.
    #[serde(default)]
    pub fair_sharing: Option<LocalQueueFairSharingStatus>,
}

/// A node's weighted share when fair sharing is on (ClusterQueues and Cohorts alike).
pub fn weighted_share(cluster: &Cluster, node: crate::quota::NodeId) -> Option<FairSharingStatus> {
    cluster.settings.fair_sharing_enabled().then(|| {
        let weight = cluster.node_meta[node.index()].fair_weight;
        FairSharingStatus {
            weighted_share: cluster
                .tree
                .drs(&cluster.names, &cluster.usage, node, weight, &[])
                .rounded(),
        }
    })
}

/// Kueue's `Active` condition of a ClusterQueue.
fn cluster_queue_active(cluster: &Cluster, cq: CqId, now: Millis) -> Condition {
    match cluster.cq(cq).inactive_condition() {
        None => conditions::condition("Active", true, "Ready", "Can admit new workloads", now),
        Some((reason, message)) => conditions::condition("Active", false, reason, &message, now),
    }
}

/// Per flavor, per resource usage of a ClusterQueue, in the order of its resource groups.
fn cq_flavor_usage(cluster: &Cluster, cq: CqId) -> Vec<FlavorUsage> {
    let info = cluster.cq(cq);
    let mut out = Vec::new();
    for group in &info.resource_groups {
        for &f in &group.flavors {
            let mut resources = Vec::new();
            for &r in &group.covered {
                let Some(fr) = cluster.names.find_fr(f, r) else {
                    continue;
                };
                let total = cluster.usage.get(info.node, fr);
                let nominal = cluster.tree.quota(info.node, fr).nominal;
                resources.push(ResourceUsage {
                    name: cluster.names.resource_name(r).to_string(),
                    total: Quantity(total),
                    borrowed: Some(Quantity((total - nominal).max(0))),
                });
            }
            out.push(FlavorUsage {
                name: cluster.names.flavor_name(f).to_string(),
                resources,
            });
        }
    }
    out
}

/// The status of one ClusterQueue. Without admission checks, every reservation is an
/// admission, so reservation and usage are the same.
pub fn cluster_queue_status(s: &Scheduler, cq: CqId, now: Millis) -> ClusterQueueStatus {
    let cluster = &s.cluster;
    let holding = cluster.admitted_in(cq).len() as i32;
    let usage = cq_flavor_usage(cluster, cq);
    ClusterQueueStatus {
        conditions: vec![cluster_queue_active(cluster, cq, now)],
        flavors_reservation: usage.clone(),
        flavors_usage: usage,
        pending_workloads: s.queues.queue(cq).ordered().len() as i32,
        reserving_workloads: holding,
        admitted_workloads: holding,
        fair_sharing: weighted_share(cluster, cluster.cq(cq).node),
    }
}

/// The status of LocalQueue `namespace/name` pointing at `cluster_queue`.
pub fn local_queue_status(
    s: &Scheduler,
    namespace: &str,
    name: &str,
    cluster_queue: &str,
    now: Millis,
) -> LocalQueueStatus {
    let cluster = &s.cluster;
    let Some(&cq) = cluster.cq_by_name.get(cluster_queue) else {
        return LocalQueueStatus {
            conditions: vec![conditions::condition(
                "Active",
                false,
                "ClusterQueueDoesNotExist",
                "Can't submit new workloads to clusterQueue",
                now,
            )],
            ..LocalQueueStatus::default()
        };
    };
    let mine = |id: crate::cluster::WorkloadId| {
        let wl = cluster.workload(id);
        wl.namespace == namespace && wl.local_queue.as_deref() == Some(name)
    };
    let pending = s
        .queues
        .queue(cq)
        .ordered()
        .into_iter()
        .filter(|&id| mine(id))
        .count() as i32;
    let mut usage: BTreeMap<(String, String), i64> = BTreeMap::new();
    let mut holding = 0;
    for id in cluster.admitted_in(cq) {
        if !mine(id) {
            continue;
        }
        holding += 1;
        if let Some(a) = cluster.admission(id) {
            for &(fr, v) in &a.usage {
                let (f, r) = cluster.names.fr_parts(fr);
                *usage
                    .entry((
                        cluster.names.flavor_name(f).to_string(),
                        cluster.names.resource_name(r).to_string(),
                    ))
                    .or_default() += v;
            }
        }
    }
    let mut flavors: Vec<FlavorUsage> = Vec::new();
    for ((flavor, resource), total) in usage {
        if flavors.last().is_none_or(|f| f.name != flavor) {
            flavors.push(FlavorUsage {
                name: flavor,
                resources: Vec::new(),
            });
        }
        if let Some(f) = flavors.last_mut() {
            f.resources.push(ResourceUsage {
                name: resource,
                total: Quantity(total),
                borrowed: None,
            });
        }
    }
    let active = if cluster.cq(cq).is_active() {
        conditions::condition(
            "Active",
            true,
            "Ready",
            "Can submit new workloads to localQueue",
            now,
        )
    } else {
        conditions::condition(
            "Active",
            false,
            "ClusterQueueIsInactive",
            "Can't submit new workloads to clusterQueue",
            now,
        )
    };
    LocalQueueStatus {
        conditions: vec![active],
        pending_workloads: pending,
        reserving_workloads: holding,
        admitted_workloads: holding,
        flavors_reservation: flavors.clone(),
        flavors_usage: flavors,
        fair_sharing: admission_fair_sharing_status(cluster, namespace, name),
    }
}

/// A LocalQueue's consumed resources under admission fair sharing.
fn admission_fair_sharing_status(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Option<LocalQueueFairSharingStatus> {
    cluster.settings.admission_fair_sharing.as_ref()?;
    let lq = cluster
        .local_queues
        .iter()
        .position(|l| l.namespace == namespace && l.name == name)?;
    let lq = crate::cluster::LqId(lq as u32);
    let consumed_resources = cluster
        .lq_usage
        .consumed(lq)
        .iter()
        .enumerate()
        .map(|(r, &v)| {
            let r = crate::quota::ResourceId(r as u32);
            (
                cluster.names.resource_name(r).to_string(),
                Quantity((v * 1000.0).round() as i64),
            )
        })
        .collect();
    let last_update = cluster.lq_usage.last_sample().and_then(|ms| {
        jiff::Timestamp::from_millisecond(ms)
            .ok()
            .map(|t| t.to_string())
    });
    Some(LocalQueueFairSharingStatus {
        admission_fair_sharing_status: AdmissionFairSharingStatus {
            consumed_resources,
            last_update,
        },
    })
}

/// Keeps the transition time of conditions whose status did not change since `previous`.
pub fn carry_transition_times(new: &mut [Condition], previous: &[Condition]) {
    for c in new {
        if let Some(old) = conditions::find(previous, &c.type_)
            && old.status == c.status
        {
            c.last_transition_time = old.last_transition_time.clone();
        }
    }
}
