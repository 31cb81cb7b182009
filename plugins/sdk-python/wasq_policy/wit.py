"""The records of the WIT package ``wasq:policy@1.1.0`` as plain Python, exactly as the host sends them.

Inside a component the host's values are instances of the classes componentize-py generates
(``wit_world``); those are only importable in a build. This module declares the same classes
with the same names, fields and enum values, so that

- plain CPython (``pytest``) can build what the host would send (:mod:`wasq_policy.testing`
  does) and run the SDK's whole protocol path on it, and
- the SDK's views read either kind alike: they only read fields by name.

A plugin author rarely touches these records: the SDK hands out views
(:class:`~wasq_policy.Workload`, :class:`~wasq_policy.ordering.Head`,
:class:`~wasq_policy.preemption.Candidate`, …) with strings resolved. The enums here are the
SDK's public enums (``wasq_policy.CandidateKind is wasq_policy.wit.CandidateKind``); the SDK
converts the generated enums to these by value. Field docs are in ``wit/*.wit``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, Flag
from typing import Optional, Union

# --------------------------------------------------------------------------------------------
# types.wit: enums and flags (values in WIT declaration order, as componentize-py numbers them)


class NodeKind(Enum):
    """Whether a quota-tree node is a ClusterQueue (a leaf) or a Cohort."""

    CLUSTER_QUEUE = 0
    COHORT = 1


class WithinClusterQueue(Enum):
    """``spec.preemption.withinClusterQueue``."""

    NEVER = 0
    LOWER_PRIORITY = 1
    LOWER_OR_NEWER_EQUAL_PRIORITY = 2


class ReclaimWithinCohort(Enum):
    """``spec.preemption.reclaimWithinCohort``."""

    NEVER = 0
    LOWER_PRIORITY = 1
    ANY = 2


class BorrowWithinCohort(Enum):
    """``spec.preemption.borrowWithinCohort.policy``."""

    NEVER = 0
    LOWER_PRIORITY = 1


class FungibilityPolicy(Enum):
    """``whenCanBorrow`` / ``whenCanPreempt`` of ``spec.flavorFungibility``."""

    MAY_STOP_SEARCH = 0
    TRY_NEXT_FLAVOR = 1


class FungibilityPreference(Enum):
    """``spec.flavorFungibility.preference``."""

    BORROWING_OVER_PREEMPTION = 0
    PREEMPTION_OVER_BORROWING = 1


class QueueingStrategy(Enum):
    """``spec.queueingStrategy``."""

    STRICT_FIFO = 0
    BEST_EFFORT_FIFO = 1


class FairSharingStrategy(Enum):
    """A fair-sharing preemption strategy (Kueue's ``fairSharing.preemptionStrategies``)."""

    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = 0
    LESS_THAN_INITIAL_SHARE = 1


class RequeueReason(Enum):
    """Why a workload was evicted and queued again."""

    PREEMPTED = 0
    ADMISSION_CHECK = 1
    PODS_READY_TIMEOUT = 2


class Level(Enum):
    """Severity of a ``log`` line."""

    TRACE = 0
    DEBUG = 1
    INFO = 2
    WARN = 3
    ERROR = 4


class Needs(Flag):
    """What a plugin reads beyond its requests (``types.needs``); combine with ``|``.

    - ``TREE_USAGE``: the usage of every node of the cohort trees concerned (ordering:
      ``heads.tree_usage``, which makes the head order speculative; preemption:
      ``request.tree_usage``).
    - ``LOCAL_QUEUE_USAGE``: admission fair sharing's figures in ``sort_key``
      (``workload.local_queue_usage``).
    - ``IDENTITY``: who workloads are (namespace, owning job, labels, annotations); without it
      every workload reads as nobody in particular (namespace ``""``, no owner).
    - ``POD_SETS``: what workloads request (``workload.pod_sets``) in ``sort_key`` and in a
      preemptor; without it none.
    """

    TREE_USAGE = 1
    LOCAL_QUEUE_USAGE = 2
    IDENTITY = 4
    POD_SETS = 8

    @classmethod
    def none(cls) -> "Needs":
        """No needs at all (Kueue's own classical decisions read nothing more)."""
        return cls(0)


# --------------------------------------------------------------------------------------------
# types.wit: records


@dataclass
class Annotation:
    """One exposed annotation of a flavor or quota-tree node (key: ``annotation-key``)."""

    key: int
    value: str


@dataclass
class NewStrings:
    """Strings added to the instance's string table (``first`` = 0 starts a new table)."""

    first: int
    values: list[str]


@dataclass
class Entry:
    """One label or annotation of a workload, key and value interned."""

    key: int
    value: int


@dataclass
class Owner:
    """The job that owns a workload, as string ids."""

    kind: int
    api_version: int
    name: int


@dataclass
class ResourceAmount:
    """An amount of one resource, in milli-units."""

    resource: int
    amount: int


@dataclass
class FrAmount:
    """An amount of one flavor-resource, in milli-units."""

    fr: int
    amount: int


@dataclass
class FlavorResource:
    """A (flavor, resource) pair."""

    flavor: int
    resource: int


@dataclass
class Flavor:
    """A ResourceFlavor."""

    name: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class Quota:
    """The quota a node declares for one flavor-resource, with the figures Kueue derives."""

    fr: int
    nominal: int = 0
    borrowing_limit: Optional[int] = None
    lending_limit: Optional[int] = None
    subtree: int = 0
    guaranteed: int = 0


@dataclass
class Node:
    """A node of the quota tree: a ClusterQueue or a Cohort."""

    name: str
    kind: NodeKind
    parent: Optional[int] = None
    height: int = 0
    fair_weight: int = 1000
    quotas: list[Quota] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class PreemptionConfig:
    """A ClusterQueue's ``spec.preemption``, defaults applied."""

    within_cluster_queue: WithinClusterQueue = WithinClusterQueue.NEVER
    reclaim_within_cohort: ReclaimWithinCohort = ReclaimWithinCohort.NEVER
    borrow_within_cohort: BorrowWithinCohort = BorrowWithinCohort.NEVER
    max_priority_threshold: Optional[int] = None


@dataclass
class Fungibility:
    """A ClusterQueue's ``spec.flavorFungibility``, defaults applied (Kueue's defaults here)."""

    when_can_borrow: FungibilityPolicy = FungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: FungibilityPolicy = FungibilityPolicy.TRY_NEXT_FLAVOR
    preference: FungibilityPreference = FungibilityPreference.BORROWING_OVER_PREEMPTION


@dataclass
class ResourceGroup:
    """One entry of ``spec.resourceGroups``."""

    covered: list[int]
    flavors: list[int]


@dataclass
class ClusterQueue:
    """A ClusterQueue."""

    name: str
    node: int
    preemption: PreemptionConfig = field(default_factory=PreemptionConfig)
    fungibility: Fungibility = field(default_factory=Fungibility)
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    resource_groups: list[ResourceGroup] = field(default_factory=list)
    admission_fair_sharing: bool = False


@dataclass
class LocalQueue:
    """A LocalQueue."""

    namespace: str
    name: str
    cluster_queue: Optional[int] = None
    fair_weight: int = 1000


@dataclass
class FairSharing:
    """Kueue's ``fairSharing`` configuration, present when fair sharing is on."""

    strategies: list[FairSharingStrategy]


@dataclass
class AdmissionFairSharing:
    """Kueue's ``admissionFairSharing`` configuration, present when it is on."""

    half_life: int
    sampling_interval: int
    resource_weights: list[float]


@dataclass
class NodeUsage:
    """The quota usage of one quota-tree node (a flavor-resource not listed is 0)."""

    node: int
    usage: list[FrAmount]


@dataclass
class LocalQueueUsage:
    """Admission fair sharing's figures for one LocalQueue."""

    local_queue: int
    consumed: list[float]
    penalty: list[float]
    weighted: float


@dataclass
class Setting:
    """One plugin setting (``pluginSettings.<plugin>.<key>``)."""

    key: str
    value: str


@dataclass
class Catalog:
    """Everything named once; every index in a request refers to the latest catalog."""

    generation: int = 0
    resources: list[str] = field(default_factory=list)
    flavors: list[Flavor] = field(default_factory=list)
    flavor_resources: list[FlavorResource] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    cluster_queues: list[ClusterQueue] = field(default_factory=list)
    local_queues: list[LocalQueue] = field(default_factory=list)
    annotation_keys: list[str] = field(default_factory=list)
    settings: list[Setting] = field(default_factory=list)
    fair_sharing: Optional[FairSharing] = None
    admission_fair_sharing: Optional[AdmissionFairSharing] = None


@dataclass
class PodSet:
    """One podSet of a workload: ``count`` pods of ``per_pod`` each."""

    count: int
    min_count: Optional[int] = None
    per_pod: list[ResourceAmount] = field(default_factory=list)


@dataclass
class WorkloadIdentity:
    """Who a workload is, as string ids."""

    namespace: int
    owner: Optional[Owner] = None
    labels: list[Entry] = field(default_factory=list)
    annotations: list[Entry] = field(default_factory=list)


@dataclass
class Workload:
    """What a plugin knows of a pending workload."""

    id: int
    cluster_queue: int
    priority: int = 0
    created: int = 0
    queued: int = 0
    local_queue: Optional[int] = None
    identity: Optional[WorkloadIdentity] = None
    requeue_count: int = 0
    requeue_reason: Optional[RequeueReason] = None
    pod_sets: Optional[list[PodSet]] = None


# --------------------------------------------------------------------------------------------
# ordering.wit


@dataclass
class SortKey:
    """A queue-order key as the host receives it (the SDK's is :class:`ordering.SortKey`)."""

    primary: int
    secondary: int
    tertiary: int


@dataclass
class HeadInfo:
    """One entry of an ordering instance's table of heads."""

    workload: int
    cluster_queue: int
    local_queue: Optional[int] = None
    priority: int = 0
    created: int = 0
    queued: int = 0
    key: SortKey = field(default_factory=lambda: SortKey(0, 0, 0))
    requeue_count: int = 0
    requeue_reason: Optional[RequeueReason] = None
    identity: Optional[WorkloadIdentity] = None


@dataclass
class NewHeads:
    """Heads added to the table of heads (``first`` = 0 starts a new table)."""

    first: int
    heads: list[HeadInfo]


@dataclass
class HeadGroup:
    """This cycle's heads that share how they were assigned."""

    second_pass: bool
    borrowing_level: int
    heads: list[int]


@dataclass
class HeadUsage:
    """The quota one head's assignment takes."""

    head: int
    usage: list[FrAmount]


# --------------------------------------------------------------------------------------------
# preemption.wit


class CandidateKind(Enum):
    """How a candidate relates to the preemptor (decides the ``Preempted`` reason)."""

    SAME_QUEUE = 0
    HIERARCHICAL_RECLAIM = 1
    RECLAIM_WITHOUT_BORROWING = 2
    RECLAIM_WHILE_BORROWING = 3
    FAIR_SHARING = 4


@dataclass
class AdmittedRow:
    """One row of a preemption instance's table of admitted workloads."""

    workload: int
    cluster_queue: int
    local_queue: Optional[int] = None
    priority: int = 0
    created: int = 0
    admitted: int = 0
    requeue_count: int = 0
    requeue_reason: Optional[RequeueReason] = None
    usage: list[FrAmount] = field(default_factory=list)
    identity: Optional[WorkloadIdentity] = None


@dataclass
class NewRows:
    """Rows added to the table of admitted workloads (``first`` = 0 starts a new table)."""

    first: int
    rows: list[AdmittedRow]


@dataclass
class CandidateGroup:
    """Candidates that relate to the preemptor alike, by their rows."""

    kind: CandidateKind
    lca: Optional[int]
    evicting: bool
    rows: list[int]


@dataclass
class LocalQueueShare:
    """Admission fair sharing's usage of one LocalQueue, as preemption compares it."""

    local_queue: int
    weighted: float


@dataclass
class PreemptionRequest:
    """``preemption.request``: one preemptor and everything needed to choose its victims."""

    preemptor: Workload
    requests: list[FrAmount]
    needs_preemption: list[int]
    candidates: list[int]
    groups: list[CandidateGroup]
    local_queue_usage: list[LocalQueueShare] = field(default_factory=list)
    usage_kept: bool = False
    usage: list[NodeUsage] = field(default_factory=list)
    tree_usage: Optional[list[NodeUsage]] = None
    now: int = 0


@dataclass
class Victims:
    """The ``victims`` record of an answer."""

    victims: list[int]
    allow_borrowing: bool


@dataclass
class Answer_NoVictims:  # noqa: N801 - the name componentize-py generates
    """``answer.no-victims``."""


@dataclass
class Answer_Victims:  # noqa: N801
    """``answer.victims``."""

    value: Victims


@dataclass
class Answer_KueueAmong:  # noqa: N801
    """``answer.kueue-among``."""

    value: list[int]


# --------------------------------------------------------------------------------------------
# flavor-assignment.wit


class FitMode(Enum):
    """How a flavor fits the podSet, worst first."""

    NO_FIT = 0
    NO_PREEMPTION_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4


@dataclass
class FlavorOption:
    """One flavor the host evaluated."""

    flavor: int
    mode: FitMode
    borrow_level: int = 0


@dataclass
class FlavorRequest:
    """``flavor-assignment.request``: one podSet and one resource group."""

    workload: Workload
    pod_set: int
    requests: list[ResourceAmount]
    options: list[Optional[FlavorOption]]
    now: int = 0


# --------------------------------------------------------------------------------------------
# placement.wit


class ConstraintMode(Enum):
    """How the podSet's topology request constrains the placement."""

    REQUIRED = 0
    PREFERRED = 1
    UNCONSTRAINED = 2


@dataclass
class SliceLayer:
    """One further slice layer."""

    level: int
    size: int


@dataclass
class Constraint:
    """What the podSet asks of the topology, resolved against its levels."""

    level: int
    mode: ConstraintMode
    slice_level: int
    slice_size: int = 1
    layers: list[SliceLayer] = field(default_factory=list)


@dataclass
class Domain:
    """A domain of the flavor's topology."""

    level: int
    parent: Optional[int]
    free: list[int]


@dataclass
class Leaf:
    """Where pods can go: a domain of the lowest level."""

    domain: int
    eligible: bool = True


@dataclass
class PlacementRequest:
    """``placement.request``: one TAS podSet to place."""

    workload: Workload
    pod_set: int
    flavor: int
    topology: int
    level_names: list[int]
    resource_names: list[int]
    count: int
    per_pod: list[int]
    constraint: Constraint
    domains: list[Domain]
    leaves: list[Leaf]
    leader: Optional[list[int]] = None
    now: int = 0


@dataclass
class LeafPods:
    """Pods on one leaf."""

    leaf: int
    count: int


@dataclass
class Placement:
    """Where the pods (and the leader) go."""

    pods: list[LeafPods]
    leader: Optional[int]


@dataclass
class Answer_Placed:  # noqa: N801
    """``answer.placed``."""

    value: Placement


@dataclass
class Answer_NoFit:  # noqa: N801
    """``answer.no-fit``."""

    value: str


# --------------------------------------------------------------------------------------------
# dispatch.wit (MultiKueue, added in 1.1.0): names cross as strings, there is no string table.


@dataclass
class Label:
    """One label: key and value, verbatim."""

    key: str
    value: str


@dataclass
class NamedQuantity:
    """An amount of one named resource, in milli-units."""

    name: str
    amount: int


@dataclass
class DispatchPodSet:
    """``dispatch.pod-set`` (generated as ``PodSet``): one podSet of the workload."""

    name: str
    count: int
    per_pod: list[NamedQuantity] = field(default_factory=list)


@dataclass
class DispatchWorkload:
    """``dispatch.workload`` (generated as ``Workload``): the workload to dispatch."""

    namespace: str
    name: str
    local_queue: str
    priority: int = 0
    created: int = 0
    reserved: int = 0
    pod_sets: list[DispatchPodSet] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)


@dataclass
class WorkerResource:
    """One flavor-resource of a worker's ClusterQueue, in milli-units."""

    flavor: str
    resource: str
    nominal: int
    usage: int


@dataclass
class WorkerQueue:
    """What the manager sees of the worker's ClusterQueue for the workload."""

    name: str
    pending: int = 0
    admitted: int = 0
    resources: list[WorkerResource] = field(default_factory=list)


@dataclass
class Cluster:
    """One candidate worker: a cluster of the workload's MultiKueueConfig."""

    name: str
    labels: list[Label] = field(default_factory=list)
    connected: bool = True
    lost_since: Optional[int] = None
    queue: Optional[WorkerQueue] = None
    copy_since: Optional[int] = None


@dataclass
class DispatchRequest:
    """``dispatch.request`` (generated as ``Request``): the workload, its clusters, the
    nominees so far."""

    now: int
    workload: DispatchWorkload
    clusters: list[Cluster]
    nominated: list[int] = field(default_factory=list)
    last_nominated: Optional[int] = None


@dataclass
class DispatchAnswer:
    """``dispatch.answer`` (generated as ``Answer``): the nominees, and when to ask again."""

    nominate: list[int]
    retry_after: Optional[int] = None


PreemptionAnswer = Union[Answer_NoVictims, Answer_Victims, Answer_KueueAmong]
PlacementAnswer = Union[Answer_Placed, Answer_NoFit]
