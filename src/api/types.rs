//! Kueue's `kueue.x-k8s.io/v1beta2` objects as users write them (the storage version).
//!
//! Field names follow Kueue exactly (camelCase on the wire). Unknown fields are errors
//! (`deny_unknown_fields`) so that a typo never silently changes behaviour. Defaults are applied
//! by accessor methods (`queueing_strategy()`, ...) so that what the user wrote stays visible.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodTemplateSpec, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::quantity::Quantity;

pub const GROUP: &str = "kueue.x-k8s.io";
pub const V1BETA2: &str = "kueue.x-k8s.io/v1beta2";
pub const V1BETA1: &str = "kueue.x-k8s.io/v1beta1";

// ---------------------------------------------------------------------------------------------
// ResourceFlavor

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceFlavor {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ResourceFlavorSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceFlavorSpec {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_taints: Vec<Taint>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_name: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Quota shared by ClusterQueue and Cohort

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceGroup {
    pub covered_resources: Vec<String>,
    pub flavors: Vec<FlavorQuotas>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlavorQuotas {
    pub name: String,
    pub resources: Vec<ResourceQuota>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceQuota {
    pub name: String,
    pub nominal_quota: Quantity,
    /// `None` = unlimited borrowing (only meaningful inside a cohort).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub borrowing_limit: Option<Quantity>,
    /// `None` = all unused quota may be lent (only meaningful inside a cohort).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lending_limit: Option<Quantity>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FairSharing {
    /// Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<Quantity>,
}

// ---------------------------------------------------------------------------------------------
// Cohort

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cohort {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: CohortSpec,
    /// Written by the controller (`status.fairSharing` under fair sharing); never read as
    /// configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CohortSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_name: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_groups: Vec<ResourceGroup>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharing>,
}

// ---------------------------------------------------------------------------------------------
// ClusterQueue

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterQueue {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ClusterQueueSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterQueueSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_groups: Vec<ResourceGroup>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cohort_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queueing_strategy: Option<QueueingStrategy>,
    /// `None` = no namespace may use this ClusterQueue; `{}` = every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavor_fungibility: Option<FlavorFungibility>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption: Option<ClusterQueuePreemption>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_checks_strategy: Option<super::checks::AdmissionChecksStrategy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_policy: Option<StopPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharing>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_scope: Option<AdmissionScope>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum QueueingStrategy {
    StrictFIFO,
    #[default]
    BestEffortFIFO,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum StopPolicy {
    #[default]
    None,
    Hold,
    HoldAndDrain,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionScope {
    pub admission_mode: AdmissionMode,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AdmissionMode {
    UsageBasedAdmissionFairSharing,
    #[default]
    NoAdmissionFairSharing,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlavorFungibility {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_can_borrow: Option<FungibilityPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_can_preempt: Option<FungibilityPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preference: Option<FungibilityPreference>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum FungibilityPolicy {
    MayStopSearch,
    TryNextFlavor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum FungibilityPreference {
    BorrowingOverPreemption,
    PreemptionOverBorrowing,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterQueuePreemption {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaim_within_cohort: Option<ReclaimWithinCohort>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_cluster_queue: Option<WithinClusterQueue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub borrow_within_cohort: Option<BorrowWithinCohort>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ReclaimWithinCohort {
    #[default]
    Never,
    LowerPriority,
    Any,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum WithinClusterQueue {
    #[default]
    Never,
    LowerPriority,
    LowerOrNewerEqualPriority,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BorrowWithinCohort {
    #[serde(default)]
    pub policy: BorrowWithinCohortPolicy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_priority_threshold: Option<i32>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum BorrowWithinCohortPolicy {
    #[default]
    Never,
    LowerPriority,
}

impl ClusterQueueSpec {
    pub fn queueing_strategy(&self) -> QueueingStrategy {
        self.queueing_strategy.unwrap_or_default()
    }
    pub fn reclaim_within_cohort(&self) -> ReclaimWithinCohort {
        self.preemption
            .as_ref()
            .and_then(|p| p.reclaim_within_cohort)
            .unwrap_or_default()
    }
    pub fn within_cluster_queue(&self) -> WithinClusterQueue {
        self.preemption
            .as_ref()
            .and_then(|p| p.within_cluster_queue)
            .unwrap_or_default()
    }
    pub fn borrow_within_cohort(&self) -> BorrowWithinCohort {
        self.preemption
            .as_ref()
            .and_then(|p| p.borrow_within_cohort.clone())
            .unwrap_or_default()
    }
    pub fn when_can_borrow(&self) -> FungibilityPolicy {
        self.flavor_fungibility
            .as_ref()
            .and_then(|f| f.when_can_borrow)
            .unwrap_or(FungibilityPolicy::MayStopSearch)
    }
    pub fn when_can_preempt(&self) -> FungibilityPolicy {
        self.flavor_fungibility
            .as_ref()
            .and_then(|f| f.when_can_preempt)
            .unwrap_or(FungibilityPolicy::TryNextFlavor)
    }
    pub fn fungibility_preference(&self) -> FungibilityPreference {
        self.flavor_fungibility
            .as_ref()
            .and_then(|f| f.preference)
            .unwrap_or(FungibilityPreference::BorrowingOverPreemption)
    }
    pub fn stop_policy(&self) -> StopPolicy {
        self.stop_policy.unwrap_or_default()
    }
}

// ---------------------------------------------------------------------------------------------
// LocalQueue

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalQueue {
    pub metadata: ObjectMeta,
    pub spec: LocalQueueSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalQueueSpec {
    pub cluster_queue: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_policy: Option<StopPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharing>,
}

// ---------------------------------------------------------------------------------------------
// WorkloadPriorityClass

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadPriorityClass {
    pub metadata: ObjectMeta,
    pub value: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Workload

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workload {
    pub metadata: ObjectMeta,
    pub spec: WorkloadSpec,
    /// Boxed: a Workload nobody has written a status for yet (most pending ones, until they
    /// reach the head of their queue) does not carry an empty one inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Box<WorkloadStatus>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadSpec {
    pub pod_sets: Vec<PodSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_ref: Option<PriorityClassRef>,
    /// Default true; false evicts and keeps the workload out of scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_execution_time_seconds: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preemption_gates: Vec<PreemptionGate>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreemptionGate {
    pub name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PriorityClassRef {
    pub group: String,
    pub kind: String,
    pub name: String,
}

pub const WORKLOAD_PRIORITY_CLASS_KIND: &str = "WorkloadPriorityClass";
pub const POD_PRIORITY_CLASS_KIND: &str = "PriorityClass";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSet {
    #[serde(default = "default_pod_set_name")]
    pub name: String,
    #[serde(default = "default_count")]
    pub count: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_count: Option<i32>,
    /// Shared: Workloads made from one job template, or decoded alike, hold one copy
    /// ([`crate::api::TemplateInterner`]).
    #[serde(default)]
    pub template: std::sync::Arc<PodTemplateSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_request: Option<super::topology::PodSetTopologyRequest>,
}

pub fn default_pod_set_name() -> String {
    "main".to_string()
}

fn default_count() -> i32 {
    1
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_state: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaimable_pods: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_checks: Option<Vec<AdmissionCheckState>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_requests: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accumulated_past_execution_time_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_stats: Option<serde_json::Value>,
    /// MultiKueue: the worker clusters nominated for the Workload (at most 20, each at most
    /// 256 characters); cleared when `clusterName` is set and on eviction.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nominated_cluster_names: Vec<String>,
    /// MultiKueue: the worker cluster the Workload runs on (at most 256 characters); never
    /// set together with `nominatedClusterNames`, cleared on eviction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_name: Option<String>,
}

/// One admission check's state on a Workload (Kueue's `AdmissionCheckState`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionCheckState {
    pub name: String,
    /// `Pending`, `Ready`, `Retry` or `Rejected`.
    pub state: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_count: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_after_seconds: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_set_updates: Vec<PodSetUpdate>,
}

/// What a check asks to add to a podSet's pods (Kueue's `PodSetUpdate`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSetUpdate {
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Admission {
    pub cluster_queue: String,
    #[serde(default)]
    pub pod_set_assignments: Vec<PodSetAssignment>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSetAssignment {
    pub name: String,
    #[serde(default)]
    pub flavors: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_usage: BTreeMap<String, Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_assignment: Option<super::topology::TopologyAssignment>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delayed_topology_request: Option<serde_json::Value>,
}

/// A `metav1.Condition`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl WorkloadSpec {
    pub fn active(&self) -> bool {
        self.active.unwrap_or(true)
    }
}

impl WorkloadStatus {
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

/// Kueue's well-known labels and annotations.
pub mod labels {
    pub const QUEUE_NAME: &str = "kueue.x-k8s.io/queue-name";
    pub const PRIORITY_CLASS: &str = "kueue.x-k8s.io/priority-class";
    pub const POD_GROUP_NAME: &str = "kueue.x-k8s.io/pod-group-name";
    pub const POD_GROUP_TOTAL_COUNT: &str = "kueue.x-k8s.io/pod-group-total-count";
    pub const PRIORITY_BOOST: &str = "kueue.x-k8s.io/priority-boost";
    /// The podSet an admitted job's pods belong to (Kueue's `constants.PodSetLabel`).
    pub const POD_SET: &str = "kueue.x-k8s.io/podset";
}
