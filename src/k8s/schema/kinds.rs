//! The API resources wasq reads and writes: Kueue's kinds (served as `v1beta2`), among them the
//! AdmissionCheck and ProvisioningRequestConfig of two-phase admission, the Topology of
//! topology-aware scheduling and MultiKueue's MultiKueueCluster and MultiKueueConfig.

use kube::core::ApiResource;

use crate::api::{GROUP, V1BETA2};

/// The version wasq stores and watches.
pub const KUEUE_VERSION: &str = "v1beta2";

/// One of Kueue's kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KueueKind {
    ResourceFlavor,
    Cohort,
    ClusterQueue,
    LocalQueue,
    WorkloadPriorityClass,
    Workload,
    AdmissionCheck,
    ProvisioningRequestConfig,
    /// Topology-aware scheduling's levels (cluster-scoped).
    Topology,
    /// MultiKueue's worker clusters and the configs of its AdmissionChecks (cluster-scoped).
    MultiKueueCluster,
    MultiKueueConfig,
}

impl KueueKind {
    pub const ALL: [KueueKind; 11] = [
        KueueKind::ResourceFlavor,
        KueueKind::Cohort,
        KueueKind::ClusterQueue,
        KueueKind::LocalQueue,
        KueueKind::WorkloadPriorityClass,
        KueueKind::Workload,
        KueueKind::AdmissionCheck,
        KueueKind::ProvisioningRequestConfig,
        KueueKind::Topology,
        KueueKind::MultiKueueCluster,
        KueueKind::MultiKueueConfig,
    ];

    pub fn kind(self) -> &'static str {
        match self {
            KueueKind::ResourceFlavor => "ResourceFlavor",
            KueueKind::Cohort => "Cohort",
            KueueKind::ClusterQueue => "ClusterQueue",
            KueueKind::LocalQueue => "LocalQueue",
            KueueKind::WorkloadPriorityClass => "WorkloadPriorityClass",
            KueueKind::Workload => "Workload",
            KueueKind::AdmissionCheck => "AdmissionCheck",
            KueueKind::ProvisioningRequestConfig => "ProvisioningRequestConfig",
            KueueKind::Topology => "Topology",
            KueueKind::MultiKueueCluster => "MultiKueueCluster",
            KueueKind::MultiKueueConfig => "MultiKueueConfig",
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            KueueKind::ResourceFlavor => "resourceflavors",
            KueueKind::Cohort => "cohorts",
            KueueKind::ClusterQueue => "clusterqueues",
            KueueKind::LocalQueue => "localqueues",
            KueueKind::WorkloadPriorityClass => "workloadpriorityclasses",
            KueueKind::Workload => "workloads",
            KueueKind::AdmissionCheck => "admissionchecks",
            KueueKind::ProvisioningRequestConfig => "provisioningrequestconfigs",
            KueueKind::Topology => "topologies",
            KueueKind::MultiKueueCluster => "multikueueclusters",
            KueueKind::MultiKueueConfig => "multikueueconfigs",
        }
    }

    pub fn namespaced(self) -> bool {
        matches!(self, KueueKind::LocalQueue | KueueKind::Workload)
    }

    pub fn api_resource(self) -> ApiResource {
        ApiResource {
            group: GROUP.into(),
            version: KUEUE_VERSION.into(),
            api_version: V1BETA2.into(),
            kind: self.kind().into(),
            plural: self.plural().into(),
        }
    }
}
