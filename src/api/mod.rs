//! Kueue API objects: the `v1beta2` types, `v1beta1` conversion, quantities, Job and pod-group
//! conversion into Workloads, manifest loading and validation.
//!
//! Everything downstream (quota, queue, scheduler, drivers) consumes [`Manifests`]: validated
//! `v1beta2` objects. Nothing here does scheduling.

pub mod catalog;
pub mod checks;
pub mod config;
pub mod decode;
pub mod defaults;
pub mod duration;
pub mod error;
pub mod jobs;
pub mod load;
pub mod multikueue;
pub mod names;
pub mod pods;
pub mod policy;
pub mod provenance;
pub mod quantity;
pub mod strict;
pub mod templates;
pub mod topology;
pub mod types;
pub mod v1beta1;
pub mod validate;
pub mod validate_workload;
pub mod yaml;

pub use quantity::Quantity;
pub use templates::TemplateInterner;
pub use types::*;

use k8s_openapi::api::core::v1::Namespace;

/// Where a manifest document came from: the file and the document's 1-based index in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: std::path::PathBuf,
    pub doc: usize,
}

/// An object of a group wasq's drivers define (e.g. `sim.wasq.dev/v1alpha1` `Trace`), passed on
/// untyped for the driver to read.
#[derive(Debug, Clone, PartialEq)]
pub struct Extension {
    pub origin: Origin,
    pub api_version: String,
    pub kind: String,
    pub value: serde_json::Value,
}

/// Every object of a set of manifests, converted to `v1beta2` and validated.
#[derive(Debug, Clone, Default)]
pub struct Manifests {
    pub namespaces: Vec<Namespace>,
    pub flavors: Vec<ResourceFlavor>,
    pub cohorts: Vec<Cohort>,
    pub cluster_queues: Vec<ClusterQueue>,
    pub local_queues: Vec<LocalQueue>,
    pub priority_classes: Vec<WorkloadPriorityClass>,
    pub admission_checks: Vec<checks::AdmissionCheck>,
    pub provisioning_request_configs: Vec<checks::ProvisioningRequestConfig>,
    /// MultiKueue's worker clusters and the configs that list them.
    pub multikueue_clusters: Vec<multikueue::MultiKueueCluster>,
    pub multikueue_configs: Vec<multikueue::MultiKueueConfig>,
    /// Workloads as written, plus those made from Jobs and pod groups.
    pub workloads: Vec<Workload>,
    pub extensions: Vec<Extension>,
    /// Kueue's controller configuration, when the manifests carry one.
    pub configuration: Option<config::Configuration>,
    /// Topology-aware scheduling: the `Topology` objects and, in the simulator, the `v1` Nodes.
    pub topologies: Vec<topology::Topology>,
    pub nodes: Vec<k8s_openapi::api::core::v1::Node>,
    /// wasq's `QueuePolicy` objects (`policies.wasq.dev/v1alpha1`).
    pub policies: Vec<policy::QueuePolicy>,
}
