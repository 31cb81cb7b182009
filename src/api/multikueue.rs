//! MultiKueue's objects as Kueue writes them (`kueue.x-k8s.io/v1beta2`,
//! `apis/kueue/v1beta2/multikueue_types.go`): a `MultiKueueCluster` says how to reach one worker
//! cluster (a kubeconfig in a Secret or at a path, or a ClusterProfile), a `MultiKueueConfig`
//! lists the worker clusters an AdmissionCheck of controller `kueue.x-k8s.io/multikueue`
//! dispatches to, in the order the Incremental dispatcher tries them.
//!
//! ```yaml
//! apiVersion: kueue.x-k8s.io/v1beta2
//! kind: MultiKueueConfig
//! metadata: {name: multikueue-test}
//! spec:
//!   clusters: [worker1, worker2]      # 1 to 20 names, each once
//!   quotaManagement: Manual           # Manual (default) | Automated
//! ---
//! apiVersion: kueue.x-k8s.io/v1beta2
//! kind: MultiKueueCluster
//! metadata: {name: worker1}
//! spec:
//!   clusterSource:                    # exactly one of kubeConfig, clusterProfileRef
//!     kubeConfig: {locationType: Secret, location: worker1-secret}
//! ```
//!
//! Validation is Kueue's CRD schema and CEL rules (Kueue has no webhook for these kinds), with
//! the API server's words. Defaults are applied by accessor methods. The labels and
//! annotations MultiKueue puts on the objects it copies to workers, and the names of its
//! dispatchers, are constants here for the dispatcher and controller to share.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::strict::FieldProblem;
use super::types::Condition;
use super::validate::{Problems, Scope, metadata, too_many};

/// The `controllerName` of MultiKueue's AdmissionCheck; also the `spec.managedBy` of the jobs
/// it dispatches (`MultiKueueControllerName`).
pub const MULTIKUEUE_CONTROLLER: &str = "kueue.x-k8s.io/multikueue";
/// Annotation on a MultiKueueCluster, read by `wasq simulate`: the manifests (files or
/// directories, comma-separated, relative to the file naming them) of the worker cluster it
/// stands for. Made absolute when the manifests are loaded.
pub const SIM_WORKER_MANIFESTS: &str = "sim.wasq.dev/manifests";
/// The kind of a MultiKueue AdmissionCheck's parameters.
pub const MULTIKUEUE_CONFIG_KIND: &str = "MultiKueueConfig";
pub const MULTIKUEUE_CLUSTER_KIND: &str = "MultiKueueCluster";
/// The key of a kubeconfig Secret holding the kubeconfig (`MultiKueueConfigSecretKey`).
pub const KUBECONFIG_SECRET_KEY: &str = "kubeconfig";
/// The condition of a MultiKueueCluster saying whether its worker is connected.
pub const CLUSTER_ACTIVE: &str = "Active";
/// On objects created on workers: the manager's `multiKueue.origin` (`MultiKueueOriginLabel`).
pub const ORIGIN_LABEL: &str = "kueue.x-k8s.io/multikueue-origin";
/// On objects created on workers: the UID of the manager's object.
pub const ORIGIN_UID_ANNOTATION: &str = "kueue.x-k8s.io/multikueue-origin-uid";
/// On pods a worker runs for a Workload of MultiKueue origin, with value
/// [`WORKER_WORKLOAD_POD_VALUE`].
pub const WORKER_WORKLOAD_POD_LABEL: &str = "kueue.x-k8s.io/multikueue-worker-workload-pod";
pub const WORKER_WORKLOAD_POD_VALUE: &str = "true";
/// The preemption gate of MultiKueue's orchestrated preemption (`MultiKueuePreemptionGate`).
pub const PREEMPTION_GATE: &str = "kueue.x-k8s.io/multikueue";
/// The Workload a job copied to a worker must use: a label, or an annotation when names are
/// longer than a label value or Kueue's `WorkloadIdentifierAnnotations` gate is on.
pub const PREBUILT_WORKLOAD: &str = "kueue.x-k8s.io/prebuilt-workload-name";
/// Stripped from a Workload copied to a worker (`JobUIDLabel`).
pub const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";
/// Where a `locationType: Path` kubeconfig must be when Kueue's
/// `MultiKueueKubeConfigPathValidation` gate is on (it is, by default).
pub const KUBECONFIG_PATH_PREFIX: &str = "/etc/multikueue/kubeconfigs/";

/// The dispatcher that nominates every cluster of the config at once (Kueue's default).
pub const DISPATCHER_ALL_AT_ONCE: &str = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once";
/// The dispatcher that nominates `stepSize` more clusters every 5 minutes, in the config's order.
pub const DISPATCHER_INCREMENTAL: &str = "kueue.x-k8s.io/multikueue-dispatcher-incremental";

/// The reasons of the `Active` condition Kueue's MultiKueue AdmissionCheck reconciler writes.
pub mod reasons {
    pub const ACTIVE: &str = "Active";
    /// The parameters do not name a MultiKueueConfig that exists.
    pub const BAD_CONFIG: &str = "BadConfig";
    /// Some of the config's clusters are missing or inactive (still `Active=True`).
    pub const SOME_ACTIVE_CLUSTERS: &str = "SomeActiveClusters";
    /// None of them is usable (`Active=False`).
    pub const NO_USABLE_CLUSTERS: &str = "NoUsableClusters";
}

/// At most this many clusters in a MultiKueueConfig, and nominated on a Workload.
pub const MAX_CLUSTERS: usize = 20;
/// The longest cluster name, kubeconfig location or ClusterProfile name.
pub const MAX_NAME_LENGTH: usize = 256;
/// At most this many conditions on a MultiKueueCluster.
pub const MAX_CONDITIONS: usize = 16;

// ---------------------------------------------------------------------------------------------
// MultiKueueCluster

/// One worker cluster and how to connect to it (cluster-scoped).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueCluster {
    pub metadata: ObjectMeta,
    /// How to connect to the worker cluster (optional in Kueue's schema; without it the
    /// cluster never connects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<MultiKueueClusterSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MultiKueueClusterStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueClusterSpec {
    /// Where the cluster's credentials come from: exactly one of `kubeConfig` and
    /// `clusterProfileRef`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_source: Option<ClusterSource>,
}

/// Where the cluster's credentials come from: exactly one of the two.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSource {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfig>,
    /// A `multicluster.x-k8s.io` ClusterProfile in Kueue's namespace (Kueue's alpha
    /// `MultiKueueClusterProfile` gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_profile_ref: Option<ClusterProfileReference>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeConfig {
    /// A Secret's name in Kueue's namespace (the kubeconfig under key `kubeconfig`), or a file
    /// path; 1 to 256 characters.
    pub location: String,
    /// `Secret` (default) or `Path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location_type: Option<LocationType>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum LocationType {
    #[default]
    Secret,
    Path,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterProfileReference {
    /// The ClusterProfile's name; 1 to 256 characters.
    pub name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueClusterStatus {
    /// At most 16; `Active` says whether the worker cluster is connected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl KubeConfig {
    pub fn location_type(&self) -> LocationType {
        self.location_type.unwrap_or_default()
    }
}

impl MultiKueueCluster {
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// Its source, when `spec.clusterSource` is set.
    pub fn cluster_source(&self) -> Option<&ClusterSource> {
        self.spec.as_ref()?.cluster_source.as_ref()
    }

    /// `spec.clusterSource.kubeConfig`.
    pub fn kube_config(&self) -> Option<&KubeConfig> {
        self.cluster_source()?.kube_config.as_ref()
    }

    /// `spec.clusterSource.clusterProfileRef.name`.
    pub fn cluster_profile(&self) -> Option<&str> {
        Some(
            self.cluster_source()?
                .cluster_profile_ref
                .as_ref()?
                .name
                .as_str(),
        )
    }

    /// Its `Active` condition: `Some(true)` when `True`, `Some(false)` when `False` or
    /// `Unknown`, `None` when it has none (no controller has looked at it: Kueue's reconciler
    /// counts such a cluster inactive; wasq, reading manifests, counts it active — see
    /// [`MultiKueueCluster::active_in_manifests`]).
    pub fn active(&self) -> Option<bool> {
        let c = self
            .status
            .as_ref()?
            .conditions
            .iter()
            .find(|c| c.type_ == CLUSTER_ACTIVE)?;
        Some(c.status == "True")
    }

    /// Whether the cluster counts as connected in a scenario: unless its status says it is
    /// not. Manifests rarely carry a status, and no controller of wasq's connects yet.
    pub fn active_in_manifests(&self) -> bool {
        self.active().unwrap_or(true)
    }
}

/// Kueue's CRD rules for a MultiKueueCluster.
pub fn validate_cluster(c: &MultiKueueCluster) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    metadata(&mut p, &c.metadata, Scope::Cluster);
    if let Some(spec) = &c.spec {
        match &spec.cluster_source {
            None => p.add("spec.clusterSource", "Required value"),
            Some(source) => {
                if source.kube_config.is_some() == source.cluster_profile_ref.is_some() {
                    p.add(
                        "spec.clusterSource",
                        "exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
                    );
                }
                if let Some(k) = &source.kube_config {
                    name_length(
                        &mut p,
                        "spec.clusterSource.kubeConfig.location",
                        &k.location,
                    );
                }
                if let Some(r) = &source.cluster_profile_ref {
                    name_length(&mut p, "spec.clusterSource.clusterProfileRef.name", &r.name);
                }
            }
        }
    }
    let conditions = c.status.as_ref().map_or(0, |s| s.conditions.len());
    if conditions > MAX_CONDITIONS {
        p.add(
            "status.conditions",
            too_many(MAX_CONDITIONS, "conditions", conditions),
        );
    }
    p.into_vec()
}

/// Required, at most [`MAX_NAME_LENGTH`] characters.
fn name_length(p: &mut Problems, field: &str, value: &str) {
    if value.is_empty() {
        p.add(field, "Required value");
    } else {
        at_most(p, field, value);
    }
}

fn at_most(p: &mut Problems, field: &str, value: &str) {
    let n = value.chars().count();
    if n > MAX_NAME_LENGTH {
        p.add(
            field,
            format!("must be at most {MAX_NAME_LENGTH} characters, got {n}"),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// MultiKueueConfig

/// The worker clusters of a MultiKueue AdmissionCheck (cluster-scoped, no status).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueConfig {
    pub metadata: ObjectMeta,
    /// The worker clusters (optional in Kueue's schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<MultiKueueConfigSpec>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueConfigSpec {
    /// MultiKueueCluster names, most preferred first: 1 to 20, each at most 256 characters,
    /// none twice.
    pub clusters: Vec<String>,
    /// Who sets the manager's ClusterQueue quotas: `Manual` (default) or `Automated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_management: Option<QuotaManagement>,
}

/// Who sets the manager's ClusterQueue quotas (`Automated`: Kueue's alpha
/// `MultiKueueManagerQuotaAutomation` gate).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum QuotaManagement {
    #[default]
    Manual,
    Automated,
}

impl MultiKueueConfig {
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// `spec.clusters`, in order.
    pub fn clusters(&self) -> &[String] {
        self.spec.as_ref().map_or(&[], |s| s.clusters.as_slice())
    }

    pub fn quota_management(&self) -> QuotaManagement {
        self.spec
            .as_ref()
            .and_then(|s| s.quota_management)
            .unwrap_or_default()
    }
}

/// Kueue's CRD rules for a MultiKueueConfig.
pub fn validate_config(c: &MultiKueueConfig) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    metadata(&mut p, &c.metadata, Scope::Cluster);
    if let Some(spec) = &c.spec {
        cluster_names(&mut p, "spec.clusters", &spec.clusters, true);
        let mut seen = std::collections::BTreeSet::new();
        if !spec.clusters.iter().all(|c| seen.insert(c.as_str())) {
            p.add("spec.clusters", "must be unique");
        }
    }
    p.into_vec()
}

/// A list of cluster names: at most [`MAX_CLUSTERS`] (at least one when `required`), each at
/// most [`MAX_NAME_LENGTH`] characters.
fn cluster_names(p: &mut Problems, field: &str, names: &[String], required: bool) {
    if required && names.is_empty() {
        p.add(field, "must have at least 1 item");
    } else if names.len() > MAX_CLUSTERS {
        p.add(field, too_many(MAX_CLUSTERS, "clusters", names.len()));
    }
    for (i, name) in names.iter().enumerate() {
        at_most(p, &format!("{field}[{i}]"), name);
    }
}

// ---------------------------------------------------------------------------------------------
// The Workload's fields

/// Kueue's CRD rules on a Workload's `status.clusterName` and `status.nominatedClusterNames`:
/// at most 20 nominated names and 256 characters a name, and not both set.
pub fn validate_workload_clusters(
    cluster_name: Option<&str>,
    nominated: &[String],
) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    if let Some(name) = cluster_name {
        at_most(&mut p, "status.clusterName", name);
    }
    cluster_names(&mut p, "status.nominatedClusterNames", nominated, false);
    if cluster_name.is_some() && !nominated.is_empty() {
        p.add(
            "status",
            "clusterName and nominatedClusterNames are mutually exclusive",
        );
    }
    p.into_vec()
}

/// The annotation on a copy with the [`spec_hash`] of the Workload's spec it was made from.
pub const SPEC_HASH_ANNOTATION: &str = "multikueue.wasq.dev/spec-hash";

/// A digest of a Workload's spec without its priority (class and value, which the manager
/// updates on a copy in place): a copy made from another spec is out of sync. Compared with
/// the spec the copy was made from, not the copy's own, so that what a worker's API server
/// defaults never counts as a change.
pub fn spec_hash(spec: &crate::api::WorkloadSpec) -> String {
    use sha1::{Digest, Sha1};
    let mut spec = spec.clone();
    spec.priority = None;
    spec.priority_class_ref = None;
    let digest = Sha1::digest(serde_json::to_vec(&spec).unwrap_or_default());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Kueue's `cloneForCreate`: the copy of a Workload the manager creates on a worker — name,
/// namespace, labels (with [`ORIGIN_LABEL`] set to `origin`, without [`JOB_UID_LABEL`]),
/// annotations (with [`SPEC_HASH_ANNOTATION`]) and spec; no status, owners or finalizers.
pub fn remote_workload(wl: &crate::api::Workload, origin: &str) -> crate::api::Workload {
    let mut labels = wl.metadata.labels.clone().unwrap_or_default();
    labels.insert(ORIGIN_LABEL.to_string(), origin.to_string());
    labels.remove(JOB_UID_LABEL);
    let mut annotations = wl.metadata.annotations.clone().unwrap_or_default();
    annotations.insert(SPEC_HASH_ANNOTATION.to_string(), spec_hash(&wl.spec));
    crate::api::Workload {
        metadata: ObjectMeta {
            name: wl.metadata.name.clone(),
            namespace: wl.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: wl.spec.clone(),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_copy_keeps_spec_and_labels_and_gains_the_origin() {
        let wl: crate::api::Workload = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "a", "namespace": "ns", "labels": {"team": "x", "kueue.x-k8s.io/job-uid": "u"},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "a", "uid": "u"}]},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
            "status": {"conditions": []}
        }))
        .unwrap();
        let copy = remote_workload(&wl, "multikueue");
        let labels = copy.metadata.labels.unwrap();
        assert_eq!(labels[ORIGIN_LABEL], "multikueue");
        assert_eq!(labels["team"], "x");
        assert!(!labels.contains_key(JOB_UID_LABEL));
        assert!(copy.metadata.owner_references.is_none());
        assert!(copy.status.is_none());
        assert_eq!(copy.spec, wl.spec);
    }
    use crate::api::strict::decode;
    use serde_json::json;

    #[test]
    fn defaults_are_kueues() {
        let c: MultiKueueCluster = decode(&json!({
            "metadata": {"name": "w"},
            "spec": {"clusterSource": {"kubeConfig": {"location": "w-secret"}}}
        }))
        .unwrap();
        assert_eq!(
            c.kube_config().unwrap().location_type(),
            LocationType::Secret
        );
        assert_eq!(c.active(), None);
        assert!(c.active_in_manifests());
        let conf: MultiKueueConfig =
            decode(&json!({"metadata": {"name": "c"}, "spec": {"clusters": ["w"]}})).unwrap();
        assert_eq!(conf.quota_management(), QuotaManagement::Manual);
        assert_eq!(conf.clusters(), ["w"]);
    }

    #[test]
    fn a_cluster_whose_status_says_so_is_inactive() {
        let c: MultiKueueCluster = decode(&json!({
            "metadata": {"name": "w"},
            "spec": {"clusterSource": {"clusterProfileRef": {"name": "w"}}},
            "status": {"conditions": [{"type": "Active", "status": "False",
                                       "reason": "ClientConnectionFailed", "message": "no route"}]}
        }))
        .unwrap();
        assert_eq!(c.cluster_profile(), Some("w"));
        assert_eq!(c.active(), Some(false));
        assert!(!c.active_in_manifests());
    }

    #[test]
    fn workload_cluster_fields() {
        assert!(validate_workload_clusters(Some("w1"), &[]).is_empty());
        assert_eq!(
            validate_workload_clusters(Some("w1"), &["w1".into()]),
            [FieldProblem::at(
                "status",
                "clusterName and nominatedClusterNames are mutually exclusive"
            )]
        );
        let many: Vec<String> = (0..21).map(|i| format!("w{i}")).collect();
        assert_eq!(
            validate_workload_clusters(None, &many),
            [FieldProblem::at(
                "status.nominatedClusterNames",
                "must have at most 20 clusters, got 21"
            )]
        );
    }
}
