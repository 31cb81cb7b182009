//! The scheduler's view of the cluster: ResourceFlavors, ClusterQueues, LocalQueues and Workloads
//! in compact, interned form, plus who holds quota. Built from [`crate::api::Manifests`].
//!
//! Invariants:
//! - a workload is admitted at most once at a time: [`Cluster::reserve`] refuses one that
//!   already holds quota, and its usage is added exactly once and removed exactly once;
//! - usage changes only through [`Cluster::reserve`] / [`Cluster::release`], so the quota tree's
//!   usage always equals the sum of the admitted workloads' usage.

pub mod admitted;
pub mod afs;
mod bodies;
pub mod budget;
mod build;
pub mod checks;
mod index;
pub mod matching;
pub mod multikueue;
mod settings;
mod strmap;
mod topology;

pub use strmap::StrMap;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use smallvec::SmallVec;

use crate::api::{
    BorrowWithinCohortPolicy, FungibilityPolicy, FungibilityPreference, QueueingStrategy,
    ReclaimWithinCohort, StopPolicy, WithinClusterQueue,
};
use crate::quota::{FlavorId, FrIdx, Names, NodeId, QuotaTree, ResourceId, Usage};

pub use admitted::{AdmittedRow, AdmittedRows, next_admission_serial};
pub use afs::{Changed, LqUsage};
pub use budget::{BudgetDefaults, PreemptionBudget};
pub use build::{BuildError, build_cluster, build_cluster_with, fair_weight, pod_requests};
pub use settings::{AdmissionFairSharing, SchedulingSettings, WaitForPodsReady};

/// Milliseconds since the Unix epoch, on whatever clock drives the scheduler.
pub type Millis = i64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkloadId(pub u32);

impl WorkloadId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CqId(pub u32);

impl CqId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Debug, Clone)]
pub struct FlavorInfo {
    pub id: FlavorId,
    pub name: String,
    pub node_labels: BTreeMap<String, String>,
    pub node_taints: Vec<Taint>,
    pub tolerations: Vec<Toleration>,
    pub annotations: BTreeMap<String, String>,
    /// `spec.topologyName`: a TAS flavor.
    pub topology_name: Option<String>,
}

/// What policies may know of a quota-tree node beyond its quota.
#[derive(Debug, Clone, Default)]
pub struct NodeMeta {
    /// The ClusterQueue's or Cohort's annotations.
    pub annotations: BTreeMap<String, String>,
    /// `spec.fairSharing.weight` in milli-units (1000 when unset).
    pub fair_weight: i64,
    /// A Cohort on a parent cycle or below one: Kueue disables its whole tree (and reports
    /// nothing for it).
    pub in_cycle: bool,
}

/// Why a workload was last evicted and queued again: the Kueue eviction reasons (the
/// `Evicted` condition's reason) after which a workload is queued again, what the WIT calls a
/// `requeue-reason`. Not the queue's [`crate::queue::RequeueReason`], which says why a head
/// goes back to its queue within a cycle. One byte, not a string, in the records every cycle
/// reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EvictionReason {
    /// `Preempted`: another workload needed its quota.
    Preempted,
    /// `AdmissionCheck`: an admission check asked for a retry.
    AdmissionCheck,
    /// `PodsReadyTimeout`: its pods were not ready in time (`waitForPodsReady`).
    PodsReadyTimeout,
}

impl EvictionReason {
    /// Kueue's reason string.
    pub const fn as_str(self) -> &'static str {
        match self {
            EvictionReason::Preempted => "Preempted",
            EvictionReason::AdmissionCheck => "AdmissionCheck",
            EvictionReason::PodsReadyTimeout => "PodsReadyTimeout",
        }
    }

    /// The reason Kueue names `reason` (an `Evicted` condition's reason), if it is one.
    pub fn of_kueue(reason: &str) -> Option<EvictionReason> {
        [
            EvictionReason::Preempted,
            EvictionReason::AdmissionCheck,
            EvictionReason::PodsReadyTimeout,
        ]
        .into_iter()
        .find(|r| r.as_str() == reason)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LqId(pub u32);

impl LqId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A LocalQueue.
#[derive(Debug, Clone)]
pub struct LocalQueueInfo {
    pub namespace: String,
    pub name: String,
    /// `None` when its ClusterQueue does not exist.
    pub cluster_queue: Option<CqId>,
    /// `spec.clusterQueue`, whether it exists or not.
    pub cluster_queue_name: String,
    /// `spec.fairSharing.weight` in milli-units (1000 when unset), for admission fair sharing.
    pub fair_weight: i64,
}

/// A ClusterQueue's resource group. Inline up to four resources and four flavors (the size of
/// two `Vec`s): flavor assignment reads both for every head, and at 10,000 ClusterQueues two
/// allocations of their own were two reads from memory per head and cycle.
#[derive(Debug, Clone)]
pub struct ResourceGroupInfo {
    pub covered: SmallVec<[ResourceId; 4]>,
    pub flavors: SmallVec<[FlavorId; 4]>,
}

/// A ClusterQueue's preemption settings, defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreemptionConfig {
    pub within_cluster_queue: WithinClusterQueue,
    pub reclaim_within_cohort: ReclaimWithinCohort,
    pub borrow_within_cohort: BorrowWithinCohortPolicy,
    pub max_priority_threshold: Option<i32>,
}

/// A ClusterQueue's flavorFungibility, defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fungibility {
    pub when_can_borrow: FungibilityPolicy,
    pub when_can_preempt: FungibilityPolicy,
    pub preference: FungibilityPreference,
}

/// A ClusterQueue as the core tracks it.
///
/// In declaration order (`repr(C)`): what a cycle reads for every head of the queue (its
/// node, preemption and fungibility settings, strategy, budget, resource groups, whether it is
/// active) first, within the record's first [`ClusterQueueInfo::HOT_BYTES`] (`layout_tests`),
/// so that they are two or three adjacent lines rather than fields spread over the record;
/// names, selectors and annotations after. The resource groups are inline when there is one (every
/// queue of Kueue's shapes) and found by a scan of their covered resources: a `Vec` of them and
/// a hash map from resource to group were two allocations of their own, each a read from
/// memory per head and cycle at 10,000 ClusterQueues (BENCHMARKS.md, stop 54).
#[derive(Debug, Clone)]
#[repr(C)]
pub struct ClusterQueueInfo {
    pub node: NodeId,
    pub id: CqId,
    pub preemption: PreemptionConfig,
    pub fungibility: Fungibility,
    pub strategy: QueueingStrategy,
    /// `admissionScope.admissionMode: UsageBasedAdmissionFairSharing` with admission fair
    /// sharing configured: its queue orders by LocalQueue usage first.
    pub admission_fair_sharing: bool,
    pub stop_policy: StopPolicy,
    /// The preemption budget in effect: its annotations over the `--config` file's
    /// ([`Cluster::apply_budget_defaults`]).
    pub budget: PreemptionBudget,
    /// Its `resourceGroups`; a resource is covered by at most one ([`ClusterQueueInfo::group_of`]).
    pub resource_groups: SmallVec<[ResourceGroupInfo; 1]>,
    /// `None` when active; otherwise why not (missing flavor, cohort cycle, stopped, ...).
    pub inactive_reason: Option<String>,
    /// Its admission checks (`admissionChecksStrategy`), each with the flavors it applies to.
    pub admission_checks: Vec<checks::CheckRule>,
    pub name: String,
    pub cohort: Option<String>,
    pub namespace_selector: Option<LabelSelector>,
    pub annotations: BTreeMap<String, String>,
    /// Its labels (a `QueuePolicy`'s `clusterQueueSelector` reads them).
    pub labels: BTreeMap<String, String>,
    /// Every flavor-resource this queue declares quota for.
    pub frs: Vec<FrIdx>,
    /// The preemption budget its annotations set (malformed values left out).
    pub budget_annotations: PreemptionBudget,
}

impl ClusterQueueInfo {
    /// How many of the record's first bytes a cycle reads for a head (`layout_tests`).
    pub const HOT_BYTES: usize = 128;

    pub fn is_active(&self) -> bool {
        self.inactive_reason.is_none()
    }

    /// Kueue's `Active=False` condition of an inactive ClusterQueue: reason and message.
    pub fn inactive_condition(&self) -> Option<(&'static str, String)> {
        let why = self.inactive_reason.as_deref()?;
        let reason = if why.starts_with("references missing ResourceFlavor") {
            "FlavorNotFound"
        } else if why.starts_with("references missing AdmissionCheck") {
            "AdmissionCheckNotFound"
        } else if why.starts_with("references inactive AdmissionCheck") {
            "AdmissionCheckInactive"
        } else if why.starts_with(build::MULTIPLE_MULTIKUEUE_CHECKS) {
            "MultipleMultiKueueAdmissionChecks"
        } else if why.starts_with(build::MULTIKUEUE_CHECK_PER_FLAVOR) {
            "MultiKueueAdmissionCheckAppliedPerFlavor"
        } else if why.starts_with(build::MULTIKUEUE_WITH_PROVISIONING) {
            "MultiKueueWithProvisioningRequest"
        } else if why.contains("stopped") {
            "Stopped"
        } else {
            "Unknown"
        };
        Some((reason, format!("Can't admit new workloads: {why}.")))
    }

    /// The index of the resource group covering `resource`, if one does (Kueue allows at most
    /// 16 groups of 16 resources; a queue has one or two).
    pub fn group_of(&self, resource: ResourceId) -> Option<usize> {
        self.resource_groups
            .iter()
            .position(|g| g.covered.contains(&resource))
    }
}

/// One podSet, with per-pod requests resolved to interned resources.
///
/// In declaration order (`repr(C)`): what a cycle reads of every head's podSets (count,
/// requests, what flavor matching reads) first, so that it sits in the record's first cache
/// lines; the name after. The first podSet lies inside its [`WorkloadInfo`], and up to two
/// requests inside the podSet, so that a head's hot fields are one run of adjacent lines rather
/// than three records reached through pointers; the topology request, read in full only for
/// TAS podSets, and the node constraints are boxed (inline the topology request took more
/// than half of the record, and the constraints two of its lines).
#[derive(Debug, Clone, PartialEq)]
#[repr(C)]
pub struct PodSetInfo {
    /// Per-pod requests in milli-units, sorted by resource.
    pub requests: SmallVec<[(ResourceId, i64); 2]>,
    /// `topologyRequest` (from the Workload or its job's pod-template annotations).
    pub topology: Option<Box<crate::api::topology::PodSetTopologyRequest>>,
    /// Its pods' tolerations, nodeSelector and required node affinity; `None` when all three
    /// are empty ([`NodeConstraints::boxed`]).
    pub constraints: Option<Box<NodeConstraints>>,
    pub count: i32,
    pub min_count: Option<i32>,
    pub name: Arc<str>,
}

/// What a podSet's pods require of a node besides resources. Read only against a flavor with
/// node labels or taints, or a node under topology-aware scheduling, so it lives apart from
/// the podSet: in place, three empty collections were two of a head's cache lines.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeConstraints {
    pub tolerations: Vec<Toleration>,
    pub node_selector: BTreeMap<String, String>,
    /// Required node affinity (`requiredDuringSchedulingIgnoredDuringExecution`): ORed terms.
    pub affinity_terms: Vec<NodeSelectorTerm>,
}

impl NodeConstraints {
    /// The constraints, boxed; `None` when there are none, so that two podSets with the same
    /// constraints compare equal however they were written.
    pub fn boxed(
        tolerations: Vec<Toleration>,
        node_selector: BTreeMap<String, String>,
        affinity_terms: Vec<NodeSelectorTerm>,
    ) -> Option<Box<NodeConstraints>> {
        let none = tolerations.is_empty() && node_selector.is_empty() && affinity_terms.is_empty();
        (!none).then(|| {
            Box::new(NodeConstraints {
                tolerations,
                node_selector,
                affinity_terms,
            })
        })
    }
}

static NO_NODE_SELECTOR: BTreeMap<String, String> = BTreeMap::new();

impl PodSetInfo {
    pub fn tolerations(&self) -> &[Toleration] {
        self.constraints.as_ref().map_or(&[], |c| &c.tolerations)
    }

    pub fn node_selector(&self) -> &BTreeMap<String, String> {
        self.constraints
            .as_ref()
            .map_or(&NO_NODE_SELECTOR, |c| &c.node_selector)
    }

    pub fn affinity_terms(&self) -> &[NodeSelectorTerm] {
        self.constraints.as_ref().map_or(&[], |c| &c.affinity_terms)
    }
}

/// A workload as the core tracks it.
///
/// In declaration order (`repr(C)`): what a cycle reads of every head (priority, times, the
/// requeue count, queue, flags, the last requeue reason, then the first podSet, inline) first,
/// so that it is one run of adjacent cache lines rather than spread over the record and the
/// records it points to; its id, names, labels and annotations after. The run is the record's
/// first 128 bytes and the record 320 (`layout_tests`), five whole cache lines: in a table that
/// starts on a line (as the workloads' table did at 1× and 10× on Kueue's shape), a head's
/// hot fields are two lines, not the three or four of an unaligned 256-byte run (stop 50). Aligning the type
/// to a cache line was tried and missed more (its table is copied when it grows, and realloc
/// cannot grow over-aligned memory in place). At ten times Kueue's large scale the heads a
/// cycle visits no longer fit the last-level cache, and each line of a head's record read is a
/// miss (BENCHMARKS.md, stops 36, 37 and 50).
#[derive(Debug, Clone)]
#[repr(C)]
pub struct WorkloadInfo {
    pub priority: i32,
    /// From the `kueue.x-k8s.io/priority-boost` annotation.
    pub priority_boost: i32,
    /// The queue-order timestamp (Kueue's `GetQueueOrderTimestamp`): the creation time, or
    /// the eviction time once evicted by an admission check or a PodsReady timeout
    /// (`requeuingStrategy.timestamp: Eviction`).
    pub created: Millis,
    /// When it last entered its queue (set by the scheduler; `created` until then).
    pub queued: Millis,
    /// How often the workload was evicted and queued again, for any reason (preemption,
    /// admission check, PodsReady timeout; Kueue's `requeueState.count` counts only the last),
    /// and the last reason (`requeue_reason`): what policies see of a workload's history.
    pub requeue_count: u32,
    /// The LocalQueue, when it exists.
    pub lq: Option<LqId>,
    pub cluster_queue: Option<CqId>,
    pub active: bool,
    /// Whether its ClusterQueue's `namespaceSelector` matches its namespace's labels (false
    /// without a ClusterQueue or a selector). Kueue checks this at every nomination; labels
    /// and selectors change only with a new configuration, so it is decided when the cluster is
    /// built.
    pub namespace_matches: bool,
    /// The last reason it was requeued for (see `requeue_count`).
    pub requeue_reason: Option<EvictionReason>,
    /// Inline when there is one (most workloads), on the heap past that.
    pub pod_sets: SmallVec<[PodSetInfo; 1]>,
    /// Its index in the cluster's table (the cycle knows it already).
    pub id: WorkloadId,
    /// Why the workload cannot be queued at all (no LocalQueue, ...).
    pub unqueueable: Option<Box<str>>,
    pub namespace: String,
    pub name: String,
    /// `namespace/name`.
    pub key: String,
    pub local_queue: Option<String>,
    pub priority_class: Option<Box<str>>,
    pub annotations: StrMap,
    /// The Workload's labels (policies see those their allow-list passes).
    pub labels: StrMap,
    /// The job that owns it: the Workload's controller ownerReference; `None` for a bare
    /// Workload (boxed: most of a pending workload's size is inline).
    pub owner: Option<Box<JobOwner>>,
}

/// The owning job of a workload, as its controller ownerReference names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOwner {
    pub kind: String,
    pub api_version: String,
    pub name: String,
}

impl WorkloadInfo {
    /// The empty record left in a removed workload's slot.
    fn removed(id: WorkloadId) -> WorkloadInfo {
        WorkloadInfo {
            id,
            namespace: String::new(),
            name: String::new(),
            key: String::new(),
            local_queue: None,
            lq: None,
            cluster_queue: None,
            unqueueable: None,
            priority: 0,
            priority_class: None,
            priority_boost: 0,
            created: 0,
            queued: 0,
            pod_sets: SmallVec::new(),
            annotations: StrMap::default(),
            labels: StrMap::default(),
            owner: None,
            active: false,
            namespace_matches: false,
            requeue_count: 0,
            requeue_reason: None,
        }
    }

    /// Whether `other` (the same Workload read again) differs in anything the scheduler
    /// decides on: podSets, queue, priority, exposed annotations, activity.
    pub fn same_spec(&self, other: &WorkloadInfo) -> bool {
        self.local_queue == other.local_queue
            && self.cluster_queue == other.cluster_queue
            && self.unqueueable == other.unqueueable
            && self.priority == other.priority
            && self.priority_class == other.priority_class
            && self.priority_boost == other.priority_boost
            && self.pod_sets == other.pod_sets
            && self.annotations == other.annotations
            && self.active == other.active
            && self.same_identity(other)
    }

    /// Whether what plugins see of who the workload is (labels, owning job) is the same.
    pub fn same_identity(&self, other: &WorkloadInfo) -> bool {
        self.labels == other.labels
            && self.owner == other.owner
            && self.annotations == other.annotations
            && self.local_queue == other.local_queue
    }

    /// Priority plus boost, as Kueue's `priority.EffectivePriority`.
    pub fn effective_priority(&self) -> i64 {
        i64::from(self.priority) + i64::from(self.priority_boost)
    }
}

/// What a podSet was given at admission.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PodSetAdmission {
    /// Shared with the workload's [`PodSetInfo::name`].
    pub name: Arc<str>,
    pub count: i32,
    /// Flavor per requested resource, sorted by resource (inline up to two resources).
    pub flavors: SmallVec<[(ResourceId, FlavorId); 2]>,
    /// Where its pods go, on a TAS flavor.
    pub topology: Option<crate::topology::PodSetPlacement>,
}

/// Quota reserved for a workload in a ClusterQueue: what it holds, not when it took it (the
/// time is its admitted row's, [`Cluster::reserved_at`]), so that alike admissions share one
/// body (`cluster::bodies`). One allocation for a one-podSet workload of up to four
/// flavor-resources (its podSet and usage inline, only the podSet's name apart, shared with
/// the workload's).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Admission {
    pub cluster_queue: CqId,
    pub pod_sets: SmallVec<[PodSetAdmission; 1]>,
    /// Total usage per flavor-resource.
    pub usage: crate::quota::FrAmounts,
}

/// The quota a workload holds. The admission is shared: every workload has a holding and most
/// hold no quota (16 bytes each rather than 72), and the scheduler's decision holds the same
/// admission rather than a copy of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holding {
    /// Holds no quota.
    None,
    /// Holds quota.
    Admitted(Arc<Admission>),
    /// Preempted: still holds quota until the eviction completes.
    Evicting(Arc<Admission>),
}

/// The cluster: configuration, workloads, and the quota they hold.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Topology-aware scheduling: TAS flavors' domain trees and the capacity in use.
    pub tas: crate::topology::Topologies,
    pub names: Names,
    pub tree: QuotaTree,
    pub usage: Usage,
    /// Existing ResourceFlavors (a ClusterQueue may name one that does not exist).
    pub flavors: HashMap<FlavorId, FlavorInfo>,
    pub cluster_queues: Vec<ClusterQueueInfo>,
    pub cq_by_name: HashMap<String, CqId>,
    /// Per quota-tree node (indexed by [`NodeId`]).
    pub node_meta: Vec<NodeMeta>,
    /// The ClusterQueue of each quota-tree node (`None` for Cohorts), indexed by [`NodeId`].
    pub node_cq: Vec<Option<CqId>>,
    pub local_queues: Vec<LocalQueueInfo>,
    /// Identifies this configuration (flavors, queues, quota, names): a new value, unique in the
    /// process, whenever it changes. Policies that cache what they derive from the
    /// configuration (the WASM host's catalog) key their cache by it.
    pub config_id: u64,
    /// The scheduling cycle under way (0 before the first), set by the scheduler as each cycle
    /// starts: what a plugin's CPU budget per cycle counts against.
    pub cycle: u64,
    /// Kueue's controller configuration in effect (fair sharing, admission fair sharing).
    pub settings: SchedulingSettings,
    /// The AdmissionChecks, by name.
    pub admission_checks: BTreeMap<String, checks::CheckDef>,
    /// Admission fair sharing: decayed usage per LocalQueue.
    pub lq_usage: LqUsage,
    pub namespace_labels: HashMap<String, BTreeMap<String, String>>,
    pub workloads: Vec<WorkloadInfo>,
    /// Workload ids by `namespace/name` ([`Cluster::find_workload`]).
    by_key: index::KeyIndex,
    /// What resolves a Workload's LocalQueue, ClusterQueue and priority class.
    pub(crate) lookup: WorkloadLookup,
    holdings: Vec<Holding>,
    /// Workloads holding quota, per ClusterQueue.
    admitted: Vec<AdmittedRows>,
    /// Each ClusterQueue's recent distinct admissions, which alike reservations share.
    bodies: Vec<bodies::RecentBodies>,
    /// Slots of removed workloads (handles are never reused; the next build compacts them).
    removed: usize,
}

/// The configuration's tables that resolve a Workload: LocalQueues by namespace and name
/// (and the ClusterQueue each names, existing or not), priority classes by name.
#[derive(Debug, Clone, Default)]
pub(crate) struct WorkloadLookup {
    pub lq_ids: HashMap<(String, String), LqId>,
    pub lq_target: HashMap<(String, String), String>,
    pub priority_classes: HashMap<String, i32>,
}

/// Errors from quota operations that would break an invariant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuotaError {
    #[error("workload {0} already holds quota")]
    AlreadyAdmitted(String),
    #[error("workload {0} holds no quota")]
    NotAdmitted(String),
}

/// A configuration id never used before in this process.
pub fn next_config_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Cluster {
    /// Takes over `old`'s admission-fair-sharing ledger (a rebuilt cluster interns LocalQueues
    /// and resources anew), matching LocalQueues by namespace/name and resources by name.
    pub fn carry_lq_usage_from(&mut self, old: &Cluster) {
        let lq_ids: HashMap<(&str, &str), LqId> = self
            .local_queues
            .iter()
            .enumerate()
            .map(|(i, lq)| ((lq.namespace.as_str(), lq.name.as_str()), LqId(i as u32)))
            .collect();
        self.lq_usage = old.lq_usage.remap(
            |lq| {
                let l = old.local_queues.get(lq.index())?;
                lq_ids
                    .get(&(l.namespace.as_str(), l.name.as_str()))
                    .copied()
            },
            |r| self.names.find_resource(old.names.resource_name(r)),
        );
    }

    /// Call after changing flavors, queues, quota or names.
    pub fn config_changed(&mut self) {
        self.config_id = next_config_id();
    }

    pub fn cq(&self, id: CqId) -> &ClusterQueueInfo {
        &self.cluster_queues[id.index()]
    }

    /// Sets every ClusterQueue's preemption budget from its annotations over the `--config`
    /// file's `defaults` (idempotent: the annotations are kept apart).
    pub fn apply_budget_defaults(&mut self, defaults: &BudgetDefaults) {
        for cq in &mut self.cluster_queues {
            cq.budget = cq
                .budget_annotations
                .or(defaults.for_cluster_queue(&cq.name));
        }
    }

    pub fn workload(&self, id: WorkloadId) -> &WorkloadInfo {
        &self.workloads[id.index()]
    }

    /// The workload named `namespace/name`, if registered.
    pub fn find_workload(&self, key: &str) -> Option<WorkloadId> {
        self.by_key.get(&self.workloads, key)
    }

    /// Room for `additional` more workloads.
    pub fn reserve_workloads(&mut self, additional: usize) {
        self.workloads.reserve(additional);
        self.holdings.reserve(additional);
        self.by_key.reserve(additional, &self.workloads);
    }

    /// Bytes the table of workloads by key holds (memory reports).
    pub fn key_index_bytes(&self) -> usize {
        self.by_key.heap_bytes()
    }

    pub fn holding(&self, id: WorkloadId) -> &Holding {
        &self.holdings[id.index()]
    }

    /// Asks for the line of what `id` holds (a hint, see [`wasq_alloc::prefetch`]).
    pub fn prefetch_holding(&self, id: WorkloadId) {
        if let Some(h) = self.holdings.get(id.index()) {
            wasq_alloc::prefetch(h, 1);
        }
    }

    /// The admission a workload holds, as shared with alike admissions of its ClusterQueue.
    pub fn admission_shared(&self, id: WorkloadId) -> Option<&Arc<Admission>> {
        match &self.holdings[id.index()] {
            Holding::None => None,
            Holding::Admitted(a) | Holding::Evicting(a) => Some(a),
        }
    }

    pub fn admission(&self, id: WorkloadId) -> Option<&Admission> {
        match &self.holdings[id.index()] {
            Holding::None => None,
            Holding::Admitted(a) | Holding::Evicting(a) => Some(a),
        }
    }

    pub fn is_evicting(&self, id: WorkloadId) -> bool {
        matches!(self.holdings[id.index()], Holding::Evicting(_))
    }

    /// Workloads holding quota in a ClusterQueue (admitted or being evicted), in id order.
    pub fn admitted_in(&self, cq: CqId) -> impl ExactSizeIterator<Item = WorkloadId> + '_ {
        self.admitted[cq.index()].ids()
    }

    /// What preemption reads of the workloads holding quota in a ClusterQueue, in id order.
    pub fn admitted_rows(&self, cq: CqId) -> &[AdmittedRow] {
        self.admitted[cq.index()].rows()
    }

    pub fn cq_of_node(&self, node: NodeId) -> Option<CqId> {
        self.node_cq.get(node.index()).copied().flatten()
    }

    /// Reserves quota at `reserved_at`: the workload becomes admitted and its usage is added.
    /// Returns the admission it holds: alike to a recent one of its ClusterQueue, that one.
    pub fn reserve(
        &mut self,
        id: WorkloadId,
        admission: Admission,
        reserved_at: Millis,
    ) -> Result<Arc<Admission>, QuotaError> {
        if self.admission(id).is_some() {
            return Err(QuotaError::AlreadyAdmitted(self.workload(id).key.clone()));
        }
        let cq = admission.cluster_queue;
        let admission = self.bodies[cq.index()].share(admission);
        let node = self.cq(cq).node;
        for &(fr, v) in &admission.usage {
            self.tree.add_usage(&mut self.usage, node, fr, v);
        }
        for p in admission
            .pod_sets
            .iter()
            .filter_map(|ps| ps.topology.as_ref())
        {
            self.tas.add(p, 1);
        }
        let wl = self.workload(id);
        let row = AdmittedRow {
            workload: id,
            serial: next_admission_serial(),
            evicting: false,
            lq: wl.lq,
            priority: wl.effective_priority(),
            created: wl.created,
            reserved_at,
            requeue_count: wl.requeue_count,
            requeue_reason: wl.requeue_reason,
            usage: admitted::RowUsage::from_slice(&admission.usage),
        };
        self.admitted[cq.index()].insert(row);
        self.holdings[id.index()] = Holding::Admitted(Arc::clone(&admission));
        Ok(admission)
    }

    /// When a workload holding quota reserved it.
    pub fn reserved_at(&self, id: WorkloadId) -> Option<Millis> {
        let cq = self.admission(id)?.cluster_queue;
        self.admitted[cq.index()].get(id).map(|row| row.reserved_at)
    }

    /// Marks an admitted workload as being evicted; it keeps its quota until [`Cluster::release`].
    /// `Ok(false)` when it already was (an eviction in progress is not issued again).
    pub fn mark_evicting(&mut self, id: WorkloadId) -> Result<bool, QuotaError> {
        match std::mem::replace(&mut self.holdings[id.index()], Holding::None) {
            Holding::Admitted(a) => {
                self.admitted[a.cluster_queue.index()].set_evicting(id);
                self.holdings[id.index()] = Holding::Evicting(a);
                Ok(true)
            }
            Holding::Evicting(a) => {
                self.holdings[id.index()] = Holding::Evicting(a);
                Ok(false)
            }
            Holding::None => Err(QuotaError::NotAdmitted(self.workload(id).key.clone())),
        }
    }

    /// Releases a workload's quota (finished, evicted or deleted) and returns what it held.
    pub fn release(&mut self, id: WorkloadId) -> Result<Arc<Admission>, QuotaError> {
        let admission = match std::mem::replace(&mut self.holdings[id.index()], Holding::None) {
            Holding::Admitted(a) | Holding::Evicting(a) => a,
            Holding::None => return Err(QuotaError::NotAdmitted(self.workload(id).key.clone())),
        };
        let node = self.cq(admission.cluster_queue).node;
        for &(fr, v) in &admission.usage {
            self.tree.add_usage(&mut self.usage, node, fr, -v);
        }
        for p in admission
            .pod_sets
            .iter()
            .filter_map(|ps| ps.topology.as_ref())
        {
            self.tas.add(p, -1);
        }
        self.admitted[admission.cluster_queue.index()].remove(id);
        Ok(admission)
    }

    /// Removes a workload that holds no quota (finished or deleted; the scheduler has
    /// dequeued it). Its handle is not reused: the slot keeps an empty record until the next
    /// build, and the key may be added again under a new handle.
    pub fn remove_workload(&mut self, id: WorkloadId) -> Result<(), QuotaError> {
        if self.admission(id).is_some() {
            return Err(QuotaError::AlreadyAdmitted(self.workload(id).key.clone()));
        }
        let key = std::mem::take(&mut self.workloads[id.index()].key);
        self.by_key.remove(&self.workloads, &key, id);
        self.workloads[id.index()] = WorkloadInfo::removed(id);
        self.removed += 1;
        Ok(())
    }

    /// Workloads registered, removed ones excluded.
    pub fn live_workloads(&self) -> usize {
        self.workloads.len() - self.removed
    }

    /// Registers a workload (at build, or later from the controller). Its
    /// `namespace_matches` is decided here.
    pub fn add_workload(&mut self, info: WorkloadInfo) -> WorkloadId {
        let id = WorkloadId(self.workloads.len() as u32);
        let namespace_matches = self.namespace_matches(info.cluster_queue, &info.namespace);
        self.workloads.push(WorkloadInfo {
            id,
            namespace_matches,
            requeue_count: 0,
            requeue_reason: None,
            ..info
        });
        self.by_key.insert(&self.workloads, id);
        self.holdings.push(Holding::None);
        id
    }

    /// Whether the ClusterQueue's `namespaceSelector` matches the namespace's labels (false
    /// without a ClusterQueue, a selector or known labels).
    pub fn namespace_matches(&self, cq: Option<CqId>, namespace: &str) -> bool {
        cq.is_some_and(|cq| {
            self.cq(cq).namespace_selector.as_ref().is_some_and(|sel| {
                self.namespace_labels
                    .get(namespace)
                    .is_some_and(|labels| matching::selector_matches(sel, labels))
            })
        })
    }

    /// Per-pod requests of a podSet scaled to `count` pods.
    pub fn pod_set_total(&self, ps: &PodSetInfo, count: i32) -> Vec<(ResourceId, i64)> {
        ps.requests
            .iter()
            .map(|&(r, v)| (r, v.saturating_mul(i64::from(count))))
            .collect()
    }

    pub fn flavor(&self, id: FlavorId) -> Option<&FlavorInfo> {
        self.flavors.get(&id)
    }

    /// `flavor/resource` for messages.
    pub fn fr_name(&self, fr: FrIdx) -> String {
        let (f, r) = self.names.fr_parts(fr);
        format!(
            "{}/{}",
            self.names.flavor_name(f),
            self.names.resource_name(r)
        )
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;

    /// Where `field` ends, in bytes from the start of the record `base` that holds it.
    fn end<B, T>(base: &B, field: &T) -> usize {
        field as *const T as usize + size_of::<T>() - base as *const B as usize
    }

    /// Where each field a cycle reads of a head ends, in bytes from the start of its record.
    fn hot_ends(wl: &WorkloadInfo) -> Vec<(&'static str, usize)> {
        let ps = &wl.pod_sets[0];
        vec![
            ("priority", end(wl, &wl.priority)),
            ("queued", end(wl, &wl.queued)),
            ("cluster_queue", end(wl, &wl.cluster_queue)),
            ("requeue_reason", end(wl, &wl.requeue_reason)),
            ("count", end(wl, &ps.count)),
            ("min_count", end(wl, &ps.min_count)),
            ("requests", end(wl, &ps.requests[1])),
            ("constraints", end(wl, &ps.constraints)),
            ("topology", end(wl, &ps.topology)),
        ]
    }

    /// Two cache lines when the record starts on one, and every record of a table that does
    /// (the record is whole lines long); four lines before stop 50.
    #[test]
    fn a_heads_hot_fields_are_its_records_first_128_bytes() {
        let mut wl = WorkloadInfo::removed(WorkloadId(0));
        wl.pod_sets.push(PodSetInfo {
            count: 1,
            min_count: None,
            requests: SmallVec::from_slice(&[(ResourceId(0), 1000), (ResourceId(1), 2)]),
            constraints: None,
            topology: None,
            name: "main".into(),
        });
        assert!(!wl.pod_sets.spilled() && !wl.pod_sets[0].requests.spilled());
        for (field, end) in hot_ends(&wl) {
            assert!(end <= 128, "{field} ends at byte {end}");
        }
        assert_eq!(
            size_of::<WorkloadInfo>() % 64,
            0,
            "a record of whole cache lines"
        );
    }

    /// What a cycle reads of a head's ClusterQueue lies in the record's first
    /// [`ClusterQueueInfo::HOT_BYTES`], one resource group inline; a resource's group is the
    /// one covering it.
    #[test]
    fn a_cluster_queues_hot_fields_lead_its_record() {
        let text = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: g}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\n\
             spec:\n  namespaceSelector: {}\n  resourceGroups:\n  \
             - coveredResources: [cpu, memory]\n    \
             flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1}, {name: memory, nominalQuota: 1Gi}]}]\n  \
             - coveredResources: [nvidia.com/gpu]\n    \
             flavors: [{name: g, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]\n";
        let m = crate::api::load::load_str(std::path::Path::new("test.yaml"), text).expect("loads");
        let cluster = build::build_cluster(&m, &|_| 0, 0).expect("builds");
        let cq = cluster.cq(CqId(0));
        let ends = [
            ("node", end(cq, &cq.node)),
            ("preemption", end(cq, &cq.preemption)),
            ("fungibility", end(cq, &cq.fungibility)),
            ("budget", end(cq, &cq.budget)),
            ("resource_groups", end(cq, &cq.resource_groups)),
            ("inactive_reason", end(cq, &cq.inactive_reason)),
        ];
        for (field, end) in ends {
            assert!(
                end <= ClusterQueueInfo::HOT_BYTES,
                "{field} ends at byte {end}"
            );
        }
        assert_eq!(cq.resource_groups.len(), 2);
        let names = &cluster.names;
        let r = |n: &str| names.find_resource(n).unwrap();
        assert_eq!(cq.group_of(r("cpu")), Some(0));
        assert_eq!(cq.group_of(r("memory")), Some(0));
        assert_eq!(cq.group_of(r("nvidia.com/gpu")), Some(1));
    }
}
