//! Kueue's deprecated `kueue.x-k8s.io/v1beta1` objects, where they differ from `v1beta2`, and
//! their conversion to `v1beta2` (Kueue's `apis/kueue/v1beta1/*_conversion.go`).
//!
//! ResourceFlavor, Cohort and WorkloadPriorityClass have the same schema in both versions and
//! are read as [`super::types`] directly. Differences handled here:
//! - ClusterQueue `spec.cohort` → `spec.cohortName`; `spec.admissionChecks` accepted and
//!   dropped (wasq runs no admission checks); flavorFungibility `Borrow`/`Preempt` →
//!   `MayStopSearch`; status `pendingWorkloadsStatus` dropped.
//! - LocalQueue status `flavorUsage` → `flavorsUsage`.
//! - Workload `spec.priorityClassName` + `spec.priorityClassSource` → `spec.priorityClassRef`;
//!   status `accumulatedPastExexcutionTimeSeconds` (sic) → `accumulatedPastExecutionTimeSeconds`.
//! - MultiKueueCluster `spec.kubeConfig` (and `spec.clusterProfileRef`) →
//!   `spec.clusterSource` (Kueue's `multikueue_conversion.go`: a kubeconfig with an empty
//!   location is left out). MultiKueueConfig has no `quotaManagement` in `v1beta1`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::multikueue;
use super::types::{
    self, AdmissionScope, ClusterQueuePreemption, Condition, FairSharing, FungibilityPolicy,
    FungibilityPreference, PodSet, PriorityClassRef, QueueingStrategy, ResourceGroup, StopPolicy,
};

// ---------------------------------------------------------------------------------------------
// ClusterQueue

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterQueue {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ClusterQueueSpec,
    #[serde(default)]
    pub status: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterQueueSpec {
    #[serde(default)]
    pub resource_groups: Vec<ResourceGroup>,
    #[serde(default)]
    pub cohort: Option<String>,
    #[serde(default)]
    pub queueing_strategy: Option<QueueingStrategy>,
    #[serde(default)]
    pub namespace_selector: Option<LabelSelector>,
    #[serde(default)]
    pub flavor_fungibility: Option<FlavorFungibility>,
    #[serde(default)]
    pub preemption: Option<ClusterQueuePreemption>,
    /// Names of AdmissionChecks that apply to every flavor (converted into
    /// `admissionChecksStrategy` rules without `onFlavors`).
    #[serde(default)]
    pub admission_checks: Vec<String>,
    #[serde(default)]
    pub admission_checks_strategy: Option<crate::api::checks::AdmissionChecksStrategy>,
    #[serde(default)]
    pub stop_policy: Option<StopPolicy>,
    #[serde(default)]
    pub fair_sharing: Option<FairSharing>,
    #[serde(default)]
    pub admission_scope: Option<AdmissionScope>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlavorFungibility {
    #[serde(default)]
    pub when_can_borrow: Option<WhenCanBorrow>,
    #[serde(default)]
    pub when_can_preempt: Option<WhenCanPreempt>,
    #[serde(default)]
    pub preference: Option<FungibilityPreference>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum WhenCanBorrow {
    MayStopSearch,
    TryNextFlavor,
    /// Deprecated name of `MayStopSearch`.
    Borrow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum WhenCanPreempt {
    MayStopSearch,
    TryNextFlavor,
    /// Deprecated name of `MayStopSearch`.
    Preempt,
}

impl From<WhenCanBorrow> for FungibilityPolicy {
    fn from(p: WhenCanBorrow) -> Self {
        match p {
            WhenCanBorrow::TryNextFlavor => FungibilityPolicy::TryNextFlavor,
            WhenCanBorrow::MayStopSearch | WhenCanBorrow::Borrow => {
                FungibilityPolicy::MayStopSearch
            }
        }
    }
}

impl From<WhenCanPreempt> for FungibilityPolicy {
    fn from(p: WhenCanPreempt) -> Self {
        match p {
            WhenCanPreempt::TryNextFlavor => FungibilityPolicy::TryNextFlavor,
            WhenCanPreempt::MayStopSearch | WhenCanPreempt::Preempt => {
                FungibilityPolicy::MayStopSearch
            }
        }
    }
}

impl From<ClusterQueue> for types::ClusterQueue {
    fn from(cq: ClusterQueue) -> Self {
        let s = cq.spec;
        let status = cq.status.map(|mut status| {
            status.remove("pendingWorkloadsStatus");
            Value::Object(status)
        });
        types::ClusterQueue {
            metadata: cq.metadata,
            spec: types::ClusterQueueSpec {
                resource_groups: s.resource_groups,
                cohort_name: s.cohort.filter(|c| !c.is_empty()),
                queueing_strategy: s.queueing_strategy,
                namespace_selector: s.namespace_selector,
                flavor_fungibility: s.flavor_fungibility.map(|f| types::FlavorFungibility {
                    when_can_borrow: f.when_can_borrow.map(Into::into),
                    when_can_preempt: f.when_can_preempt.map(Into::into),
                    preference: f.preference,
                }),
                preemption: s.preemption,
                admission_checks_strategy: convert_checks(
                    s.admission_checks,
                    s.admission_checks_strategy,
                ),
                stop_policy: s.stop_policy,
                fair_sharing: s.fair_sharing,
                admission_scope: s.admission_scope,
            },
            status,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// LocalQueue

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalQueue {
    pub metadata: ObjectMeta,
    pub spec: types::LocalQueueSpec,
    #[serde(default)]
    pub status: Option<Map<String, Value>>,
}

impl From<LocalQueue> for types::LocalQueue {
    fn from(lq: LocalQueue) -> Self {
        let status = lq.status.map(|mut status| {
            if let Some(usage) = status.remove("flavorUsage") {
                status.insert("flavorsUsage".into(), usage);
            }
            Value::Object(status)
        });
        types::LocalQueue {
            metadata: lq.metadata,
            spec: lq.spec,
            status,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Workload

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workload {
    pub metadata: ObjectMeta,
    pub spec: WorkloadSpec,
    #[serde(default)]
    pub status: Option<WorkloadStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadSpec {
    pub pod_sets: Vec<PodSet>,
    #[serde(default)]
    pub queue_name: Option<String>,
    #[serde(default)]
    pub priority_class_name: Option<String>,
    #[serde(default)]
    pub priority: Option<i32>,
    #[serde(default)]
    pub priority_class_source: Option<PriorityClassSource>,
    #[serde(default)]
    pub active: Option<bool>,
    #[serde(default)]
    pub maximum_execution_time_seconds: Option<i32>,
}

/// Where `priorityClassName` points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum PriorityClassSource {
    #[serde(rename = "kueue.x-k8s.io/workloadpriorityclass")]
    WorkloadPriorityClass,
    #[serde(rename = "scheduling.k8s.io/priorityclass")]
    PodPriorityClass,
    /// No source: Kueue's conversion drops the name (`spec.priority` alone decides).
    #[default]
    #[serde(rename = "")]
    None,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadStatus {
    #[serde(default)]
    pub admission: Option<types::Admission>,
    #[serde(default)]
    pub conditions: Vec<Condition>,
    #[serde(default)]
    pub requeue_state: Option<Value>,
    #[serde(default)]
    pub reclaimable_pods: Option<Value>,
    #[serde(default)]
    pub admission_checks: Option<Vec<types::AdmissionCheckState>>,
    #[serde(default)]
    pub resource_requests: Option<Value>,
    /// Spelled this way in `v1beta1`.
    #[serde(default)]
    pub accumulated_past_exexcution_time_seconds: Option<i64>,
    #[serde(default)]
    pub scheduling_stats: Option<Value>,
    #[serde(default)]
    pub nominated_cluster_names: Vec<String>,
    #[serde(default)]
    pub cluster_name: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// MultiKueue

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueCluster {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: Option<MultiKueueClusterSpec>,
    #[serde(default)]
    pub status: Option<multikueue::MultiKueueClusterStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueClusterSpec {
    pub kube_config: MultiKueueKubeConfig,
    /// Only kept for conversions in Kueue's `v1beta1`; carried over to `v1beta2`.
    #[serde(default)]
    pub cluster_profile_ref: Option<multikueue::ClusterProfileReference>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueKubeConfig {
    pub location: String,
    #[serde(default)]
    pub location_type: Option<multikueue::LocationType>,
}

impl From<MultiKueueCluster> for multikueue::MultiKueueCluster {
    fn from(c: MultiKueueCluster) -> Self {
        let spec = c.spec.map(|s| {
            let kube_config =
                (!s.kube_config.location.is_empty()).then_some(multikueue::KubeConfig {
                    location: s.kube_config.location,
                    location_type: s.kube_config.location_type,
                });
            multikueue::MultiKueueClusterSpec {
                cluster_source: Some(multikueue::ClusterSource {
                    kube_config,
                    cluster_profile_ref: s.cluster_profile_ref,
                }),
            }
        });
        multikueue::MultiKueueCluster {
            metadata: c.metadata,
            spec,
            status: c.status,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueConfig {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: Option<MultiKueueConfigSpec>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueConfigSpec {
    pub clusters: Vec<String>,
}

impl From<MultiKueueConfig> for multikueue::MultiKueueConfig {
    fn from(c: MultiKueueConfig) -> Self {
        multikueue::MultiKueueConfig {
            metadata: c.metadata,
            spec: c.spec.map(|s| multikueue::MultiKueueConfigSpec {
                clusters: s.clusters,
                quota_management: None,
            }),
        }
    }
}

impl From<Workload> for types::Workload {
    fn from(wl: Workload) -> Self {
        let s = wl.spec;
        let priority_class_ref = s.priority_class_name.and_then(|name| {
            let (group, kind) = match s.priority_class_source.unwrap_or_default() {
                PriorityClassSource::WorkloadPriorityClass => {
                    (types::GROUP, types::WORKLOAD_PRIORITY_CLASS_KIND)
                }
                PriorityClassSource::PodPriorityClass => {
                    ("scheduling.k8s.io", types::POD_PRIORITY_CLASS_KIND)
                }
                PriorityClassSource::None => return None,
            };
            Some(PriorityClassRef {
                group: group.into(),
                kind: kind.into(),
                name,
            })
        });
        types::Workload {
            metadata: wl.metadata,
            spec: types::WorkloadSpec {
                pod_sets: s.pod_sets,
                queue_name: s.queue_name,
                priority: s.priority,
                priority_class_ref,
                active: s.active,
                maximum_execution_time_seconds: s.maximum_execution_time_seconds,
                preemption_gates: Vec::new(),
            },
            status: wl.status.map(|st| {
                Box::new(types::WorkloadStatus {
                    admission: st.admission,
                    conditions: st.conditions,
                    requeue_state: st.requeue_state,
                    reclaimable_pods: st.reclaimable_pods,
                    admission_checks: st.admission_checks,
                    resource_requests: st.resource_requests,
                    accumulated_past_execution_time_seconds: st
                        .accumulated_past_exexcution_time_seconds,
                    scheduling_stats: st.scheduling_stats,
                    nominated_cluster_names: st.nominated_cluster_names,
                    cluster_name: st.cluster_name,
                })
            }),
        }
    }
}

/// v1beta1's `admissionChecks` (names) and `admissionChecksStrategy` as v1beta2's strategy:
/// the names, when given, replace the strategy, each a rule without `onFlavors` (Kueue's
/// conversion).
fn convert_checks(
    names: Vec<String>,
    strategy: Option<crate::api::checks::AdmissionChecksStrategy>,
) -> Option<crate::api::checks::AdmissionChecksStrategy> {
    if names.is_empty() {
        return strategy;
    }
    Some(crate::api::checks::AdmissionChecksStrategy {
        admission_checks: names
            .into_iter()
            .map(|name| crate::api::checks::AdmissionCheckStrategyRule {
                name,
                on_flavors: Vec::new(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::strict::decode;

    #[test]
    fn cluster_queue_cohort_and_deprecated_fungibility() {
        let v = serde_json::json!({
            "metadata": {"name": "cq"},
            "spec": {
                "cohort": "team",
                "admissionChecks": ["prov"],
                "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}
            }
        });
        let cq: types::ClusterQueue = decode::<ClusterQueue>(&v).unwrap().into();
        assert_eq!(cq.spec.cohort_name.as_deref(), Some("team"));
        assert_eq!(cq.spec.when_can_borrow(), FungibilityPolicy::MayStopSearch);
        assert_eq!(cq.spec.when_can_preempt(), FungibilityPolicy::MayStopSearch);
        // v1beta1's check names become rules that apply to every flavor.
        let rules = cq.spec.admission_checks_strategy.unwrap().admission_checks;
        assert_eq!(
            rules,
            [crate::api::checks::AdmissionCheckStrategyRule {
                name: "prov".into(),
                on_flavors: vec![]
            }]
        );
    }

    #[test]
    fn workload_priority_class_source() {
        let v = serde_json::json!({
            "metadata": {"name": "w"},
            "spec": {
                "podSets": [],
                "priorityClassName": "high",
                "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
                "priority": 7
            }
        });
        let wl: types::Workload = decode::<Workload>(&v).unwrap().into();
        let r = wl.spec.priority_class_ref.unwrap();
        assert_eq!(
            (r.group.as_str(), r.kind.as_str(), r.name.as_str()),
            ("kueue.x-k8s.io", "WorkloadPriorityClass", "high")
        );
        assert_eq!(wl.spec.priority, Some(7));
    }

    #[test]
    fn local_queue_flavor_usage_is_renamed() {
        let v = serde_json::json!({
            "metadata": {"name": "q", "namespace": "ns"},
            "spec": {"clusterQueue": "cq"},
            "status": {"flavorUsage": []}
        });
        let lq: types::LocalQueue = decode::<LocalQueue>(&v).unwrap().into();
        assert_eq!(lq.status, Some(serde_json::json!({"flavorsUsage": []})));
    }
}
