//! The four pluggable decisions — admission ordering, preemption victim selection, flavor
//! assignment and topology placement — as traits, with Kueue's behaviour as the built-in
//! implementation.
//!
//! A policy only ranks or chooses among what the host offers; it never changes quota. The
//! scheduler checks every answer with [`verify`] and falls back to the built-in policy when an
//! answer is malformed or would over-commit quota. Requests are plain data (handles, integers,
//! interned ids) so that they can cross into a WebAssembly guest unchanged.

pub mod builtin;
pub mod dispatch;
mod error;
pub mod shadow;
pub mod verify;

pub use error::PolicyError;

use std::sync::Arc;

use crate::cluster::{Cluster, CqId, Fungibility, LqId, Millis, PreemptionConfig, WorkloadId};
use crate::queue::SortKey;
use crate::quota::{FlavorId, FrIdx, NodeId, QuotaTree, ResourceId, Usage};
use crate::topology::{Placement, PlacementRequest};

/// Which implementation made a decision: `builtin`, or a plugin's name and content digest.
///
/// Every decision carries one, so it is cheap to copy: both strings are shared, and two refs
/// of the same plugin file compare by pointer first.
#[derive(Debug, Clone, Eq, serde::Serialize)]
pub struct PolicyRef {
    pub name: Arc<str>,
    pub digest: Arc<str>,
}

impl PartialEq for PolicyRef {
    fn eq(&self, other: &PolicyRef) -> bool {
        (Arc::ptr_eq(&self.digest, &other.digest) || self.digest == other.digest)
            && (Arc::ptr_eq(&self.name, &other.name) || self.name == other.name)
    }
}

/// By content, as equality is.
impl std::hash::Hash for PolicyRef {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.digest.hash(state);
    }
}

impl PolicyRef {
    pub fn builtin() -> PolicyRef {
        static BUILTIN: std::sync::LazyLock<Arc<str>> =
            std::sync::LazyLock::new(|| "builtin".into());
        PolicyRef {
            name: BUILTIN.clone(),
            digest: BUILTIN.clone(),
        }
    }

    /// Whether both refs share their strings (clones of one ref): equal without reading the
    /// text. Refs to one policy may also be equal without sharing them (`==` says).
    pub fn shares(&self, other: &PolicyRef) -> bool {
        Arc::ptr_eq(&self.name, &other.name) && Arc::ptr_eq(&self.digest, &other.digest)
    }
}

// ---------------------------------------------------------------------------------------------
// Ordering

/// What every policy call may look up: the cluster as of the decision, the quota usage the
/// decision is made on (the cycle's snapshot while heads are processed), and the clock.
#[derive(Clone, Copy)]
pub struct PolicyContext<'a> {
    pub cluster: &'a Cluster,
    pub usage: &'a Usage,
    pub now: Millis,
}

impl<'a> PolicyContext<'a> {
    /// The cluster's own usage as the basis of the decision.
    pub fn of(cluster: &'a Cluster, now: Millis) -> PolicyContext<'a> {
        PolicyContext {
            cluster,
            usage: &cluster.usage,
            now,
        }
    }
}

/// What an ordering policy reads beyond the workloads themselves, so that the host only
/// prepares (and, for a plugin, sends) what is used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// Head order depends on quota usage (fair sharing): the order is speculative — it assumes
    /// each head, in turn, takes its assignment's usage — and the host asks again for the
    /// remaining heads of a head's cohort tree whenever that head does not.
    pub tree_usage: bool,
    /// Sort keys depend on LocalQueue usage (admission fair sharing): the host re-keys the
    /// queues of ClusterQueues with `admissionScope` whenever that usage changes.
    pub local_queue_usage: bool,
    /// The policy reads who workloads are (namespace, owning job, labels, annotations): a
    /// plugin is sent them only then (WIT `needs.identity`). The built-in policies never do.
    pub identity: bool,
    /// The policy reads what workloads request (their podSets): a plugin is sent them in
    /// `sort-keys` and a preemption request's preemptor only then (WIT `needs.pod-sets`). The
    /// built-in policies never do.
    pub pod_sets: bool,
}

/// What the ordering policy sees of one queued workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedWorkload {
    pub workload: WorkloadId,
    pub cluster_queue: CqId,
    pub local_queue: Option<LqId>,
    /// Effective priority (priority + boost).
    pub priority: i64,
    /// Queue-order timestamp (creation).
    pub created: Millis,
    /// When it entered the queue (submission or the end of its eviction).
    pub queued: Millis,
}

/// One head of the cycle, after flavor assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadEntry {
    pub workload: WorkloadId,
    pub cluster_queue: CqId,
    /// Already holds quota (a second pass).
    pub has_reservation: bool,
    /// Borrowing level of the assignment (0 = within nominal quota).
    pub borrow_level: u32,
    pub priority: i64,
    pub created: Millis,
    pub queued: Millis,
    pub local_queue: Option<LqId>,
    /// The key it was queued under.
    pub key: SortKey,
    /// The quota the assignment takes, per flavor-resource.
    pub usage: crate::quota::FrAmounts,
    /// Times requeued and the last reason (the workload's `requeue_count` and
    /// `requeue_reason`), for a plugin that reads them.
    pub requeue_count: u32,
    pub requeue_reason: Option<crate::cluster::EvictionReason>,
}

pub trait OrderingPolicy: Send + Sync {
    fn id(&self) -> PolicyRef;
    /// What the policy reads (see [`Needs`]); nothing by default.
    fn needs(&self, _cx: &PolicyContext<'_>) -> Needs {
        Needs::default()
    }
    /// The keys workloads are queued under (one per workload, in order), computed when they
    /// are queued; smallest first.
    fn sort_keys(
        &self,
        cx: &PolicyContext<'_>,
        batch: &[QueuedWorkload],
    ) -> Result<Vec<SortKey>, PolicyError>;
    /// The order in which a cycle's heads are processed: a permutation of `0..heads.len()`.
    fn order_heads(
        &self,
        cx: &PolicyContext<'_>,
        heads: &[HeadEntry],
    ) -> Result<Vec<usize>, PolicyError>;
    /// Told when the scheduler refused an answer (it counts against a plugin's health).
    fn refused(&self, _error: &PolicyError) {}
}

// ---------------------------------------------------------------------------------------------
// Preemption

/// How a candidate relates to the preemptor (Kueue's preemption variants, and the reason of
/// the victim's `Preempted` condition).
pub use wasq_kueue::CandidateKind;

/// An admitted workload the host found eligible under the ClusterQueue's preemption settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub workload: WorkloadId,
    /// Its admission's serial ([`crate::cluster::AdmittedRow::serial`]; 0 for a candidate made
    /// up without one). Two candidates with the same serial agree on every field but those
    /// that relate them to a preemptor or change during the admission (`kind`, `lca`,
    /// `evicted`, `local_queue_usage`).
    pub serial: u64,
    pub cluster_queue: CqId,
    /// The candidate's ClusterQueue node in the quota tree.
    pub node: NodeId,
    pub kind: CandidateKind,
    /// The cohort under which the candidate was found (reclaim only).
    pub lca: Option<NodeId>,
    pub priority: i64,
    /// Creation time (the workload's queue-order timestamp).
    pub created: Millis,
    pub reserved_at: Millis,
    /// Already being evicted.
    pub evicted: bool,
    /// Its LocalQueue, and how often and why it was requeued (what plugins are sent of it;
    /// read from its admitted row, not its workload record).
    pub local_queue: Option<crate::cluster::LqId>,
    pub requeue_count: u32,
    pub requeue_reason: Option<crate::cluster::EvictionReason>,
    /// The quota it holds, per flavor-resource (inline: no allocation per candidate).
    pub usage: crate::quota::FrAmounts,
    /// Its LocalQueue's admission-fair-sharing usage, when its ClusterQueue uses admission
    /// fair sharing.
    pub local_queue_usage: Option<f64>,
}

impl Candidate {
    /// A copy, its usage copied as a slice (`clone` pushes a `SmallVec` item by item).
    pub(crate) fn copied(&self) -> Candidate {
        Candidate {
            usage: crate::quota::FrAmounts::from_slice(&self.usage),
            ..*self
        }
    }
}

#[cfg(test)]
impl Candidate {
    /// A candidate for tests: workload `id` of ClusterQueue `cq` (quota-tree node `cq`), in
    /// the preemptor's own queue, priority 0, admitted at 0, holding no quota.
    pub(crate) fn test(id: u32, cq: u32) -> Candidate {
        Candidate {
            workload: WorkloadId(id),
            serial: 0,
            cluster_queue: CqId(cq),
            node: NodeId(cq),
            kind: CandidateKind::SameQueue,
            lca: None,
            priority: 0,
            created: 0,
            reserved_at: 0,
            evicted: false,
            local_queue: None,
            requeue_count: 0,
            requeue_reason: None,
            usage: Default::default(),
            local_queue_usage: None,
        }
    }
}

/// Everything a preemption policy needs to choose victims.
#[derive(Debug, Clone)]
pub struct PreemptionRequest<'a> {
    pub preemptor: WorkloadId,
    pub cluster_queue: CqId,
    pub node: NodeId,
    pub priority: i64,
    pub created: Millis,
    pub config: PreemptionConfig,
    /// What the preemptor needs per flavor-resource.
    pub requests: Vec<(FrIdx, i64)>,
    /// The flavor-resources where it does not fit without preemption.
    pub needs_preemption: Vec<FrIdx>,
    /// Eligible candidates, in Kueue's candidate order (`builtin::candidate_order`:
    /// evicted first, other ClusterQueues first, lower priority first, most recently admitted
    /// first, then workload id).
    pub candidates: Vec<Candidate>,
    /// Fair sharing's preemption strategies when fair sharing is on (candidates are then
    /// Kueue's fair-sharing candidates: own queue, and borrowing queues of the cohort tree).
    pub fair_sharing: Option<&'a [crate::api::config::PreemptionStrategy]>,
    pub cluster: &'a Cluster,
    pub tree: &'a QuotaTree,
    /// Usage as of this decision (the cycle's snapshot).
    pub usage: &'a Usage,
    pub now: Millis,
    /// The preemptor's topology placement, when it has TAS podSets (Kueue's `workloadFits`
    /// also finds a topology assignment): victims must free quota *and* leaf capacity. The
    /// host checks it in [`builtin::fits_after`], so every policy's answer is verified for
    /// it, a plugin's included (a plugin sees only the candidates, not the topology).
    pub topology: Option<&'a dyn TopologyFit>,
}

/// Whether the preemptor's TAS podSets can be placed once some candidates are gone: the
/// host's placement on the leaf capacity the victims leave (Kueue's
/// `FindTopologyAssignmentsForWorkload` on the snapshot without them).
pub trait TopologyFit: std::fmt::Debug {
    /// `victims` are workloads (candidates' `workload`), in any order.
    fn fits_without(&self, victims: &[WorkloadId]) -> bool;
}

/// A policy's answer: indices into `candidates`, and whether the preemptor may borrow after
/// the victims are gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VictimSet {
    pub victims: Vec<usize>,
    pub allow_borrowing: bool,
}

pub trait PreemptionPolicy: Send + Sync {
    fn id(&self) -> PolicyRef;
    /// Chooses victims, or `None` when the preemptor cannot be made to fit.
    fn select_victims(&self, req: &PreemptionRequest<'_>)
    -> Result<Option<VictimSet>, PolicyError>;
    /// Told when the scheduler refused an answer (it counts against a plugin's health).
    fn refused(&self, _error: &PolicyError) {}
    /// Whether answers may hold victims the preemptor does not need (a policy that evicts
    /// whole groups on purpose). Off by default: the host refuses a non-minimal answer.
    fn allows_extra_victims(&self) -> bool {
        false
    }
    /// Told how many victims of an accepted answer the preemptor did not need (only when
    /// [`PreemptionPolicy::allows_extra_victims`]): counted in reports and metrics.
    fn extra_victims(&self, _n: usize) {}
}

// ---------------------------------------------------------------------------------------------
// Flavor assignment

/// How a flavor fits, best last (Kueue's granular preemption modes).
pub use wasq_kueue::flavors::FitMode;

/// One flavor of a resource group, evaluated by the host for one podSet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlavorOption {
    pub flavor: FlavorId,
    /// The flavor's worst mode over the group's requested resources.
    pub mode: FitMode,
    pub borrow_level: u32,
    /// Why the flavor does not fit outright (empty when it fits).
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct FlavorChoiceRequest<'a> {
    pub workload: WorkloadId,
    pub cluster_queue: CqId,
    pub pod_set: usize,
    /// The group's requested resources, in total for the podSet.
    pub requests: Vec<(ResourceId, i64)>,
    /// Every flavor of the group in the ClusterQueue's order; `None` where the flavor cannot
    /// host the podSet at all (taints, node affinity, missing).
    pub options: Vec<Option<FlavorOption>>,
    pub fungibility: Fungibility,
    pub cluster: &'a Cluster,
    pub now: Millis,
}

pub trait FlavorAssignmentPolicy: Send + Sync {
    fn id(&self) -> PolicyRef;
    /// The index of the chosen option, or `None` for no flavor.
    fn choose_flavor(&self, req: &FlavorChoiceRequest<'_>) -> Result<Option<usize>, PolicyError>;
    /// Told when the scheduler refused an answer (it counts against a plugin's health).
    fn refused(&self, _error: &PolicyError) {}
}

// ---------------------------------------------------------------------------------------------
// Placement (topology-aware scheduling)

/// One TAS podSet to place: who asks, and the question itself ([`PlacementRequest`]: the
/// flavor's domain tree, free capacity, eligible leaves, pod count and constraint).
#[derive(Debug, Clone)]
pub struct PlacementChoiceRequest<'a> {
    pub workload: WorkloadId,
    pub cluster_queue: CqId,
    pub pod_set: usize,
    /// The TAS flavor assigned to the podSet.
    pub flavor: FlavorId,
    pub placement: &'a PlacementRequest<'a>,
    pub cluster: &'a Cluster,
    pub now: Millis,
}

/// A placement policy's answer: pods per leaf, or why the podSet does not fit (Kueue's
/// words; "does not fit" is a value, not an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlacementAnswer {
    Placed(Placement),
    NoFit(String),
}

pub trait PlacementPolicy: Send + Sync {
    fn id(&self) -> PolicyRef;
    /// Places the podSet's pods on leaves of the tree.
    fn place(&self, req: &PlacementChoiceRequest<'_>) -> Result<PlacementAnswer, PolicyError>;
    /// Told when the scheduler refused an answer (it counts against a plugin's health).
    fn refused(&self, _error: &PolicyError) {}
}

/// The policies that decide for one ClusterQueue.
#[derive(Clone)]
pub struct PolicySet {
    pub ordering: Arc<dyn OrderingPolicy>,
    pub preemption: Arc<dyn PreemptionPolicy>,
    pub flavors: Arc<dyn FlavorAssignmentPolicy>,
    pub placement: Arc<dyn PlacementPolicy>,
    /// MultiKueue dispatch, asked by the drivers for workloads of this ClusterQueue, never by
    /// the scheduler; `None`: the built-in dispatcher the Configuration names
    /// (`dispatch::builtin`), which the driver also falls back to ([`dispatch::decide`]).
    pub dispatch: Option<Arc<dyn dispatch::DispatchPolicy>>,
    /// Policies asked the same questions and never acted on ([`shadow`]).
    pub shadows: shadow::Shadows,
}

impl PolicySet {
    pub fn builtin() -> PolicySet {
        PolicySet {
            ordering: Arc::new(builtin::KueueOrdering),
            preemption: Arc::new(builtin::KueuePreemption),
            flavors: Arc::new(builtin::KueueFlavors),
            placement: Arc::new(builtin::KueuePlacement),
            dispatch: None,
            shadows: shadow::Shadows::default(),
        }
    }
}

impl std::fmt::Debug for PolicySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicySet")
            .field("ordering", &self.ordering.id().name)
            .field("preemption", &self.preemption.id().name)
            .field("flavors", &self.flavors.id().name)
            .field("placement", &self.placement.id().name)
            .field("dispatch", &self.dispatch.as_ref().map(|d| d.id().name))
            .field("shadows", &self.shadows)
            .finish()
    }
}
