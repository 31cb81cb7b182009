"""Builders to test a policy with pytest in plain CPython, without building a component.

::

    from wasq_policy import testing
    from wasq_policy.testing import CatalogBuilder

    catalog = (CatalogBuilder().flavor_resources(1)
               .cluster_queue("cq").quota(0, 0, 10)
               .setting("namespaces", "prod").build())
    prod = testing.workload(catalog, 1, priority=0, namespace="prod")
    dev = testing.workload(catalog, 2, priority=1, namespace="dev")
    request = testing.preemption_request(
        catalog, testing.workload(catalog, 9, priority=100), requests={0: 5},
        candidates=[testing.candidate(prod, usage={0: 5}), testing.candidate(dev, usage={0: 5})],
        usage={0: {0: 10}})
    policy = MyPolicy()
    policy.catalog_changed(catalog)
    assert policy.select_victims(catalog, request) == KueueAmong([1])

A dispatch request is built with :func:`dispatch_request` over clusters of
:func:`dispatch_cluster`; :func:`check_dispatch` says why the host would refuse an answer,
and :func:`run_dispatch` runs a policy through the exported plugin's runtime (settings
first, as the host sends them).

Requests are built as the host sends them — rows, heads and groups, interned strings — and
read through the same code the exported plugin runs. :func:`run_preemption` and friends go
one step further and drive the exported plugin's runtime on host records.
"""

from __future__ import annotations

import contextlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence, Union

from . import dispatch as _dispatch
from . import kueue, wit
from . import log as _log
from .catalog import Catalog
from .dispatch import Answer as DispatchAnswer
from .dispatch import Request as DispatchRequest
from .flavor_assignment import Request as FlavorRequest
from .ordering import Heads, join_heads
from .placement import Request as PlacementRequest
from .preemption import Request as PreemptionRequest
from .preemption import join_candidates
from .quota import QuotaView
from .tables import HeadTable, RowTable
from .wit import CandidateKind, ConstraintMode, FitMode, Level, NodeKind
from .workload import Workload

Amounts = Union[Mapping[int, int], Iterable[tuple[int, int]]]


def amounts(pairs: Amounts) -> list[wit.FrAmount]:
    """Flavor-resource amounts from ``{fr: amount}`` or ``(fr, amount)`` pairs."""
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    return [wit.FrAmount(fr, amount) for fr, amount in items]


def node_usage(node: int, usage: Amounts) -> wit.NodeUsage:
    """One node's usage (``{fr: amount}``): an entry of a request's ``usage``."""
    return wit.NodeUsage(node, amounts(usage))


def _usage_list(usage: Union[Mapping[int, Amounts], Iterable[wit.NodeUsage]]) -> list[Any]:
    if isinstance(usage, Mapping):
        return [node_usage(node, frs) for node, frs in usage.items()]
    return list(usage)


# --------------------------------------------------------------------------------------------
# Catalogs


class CatalogBuilder:
    """Builds a :class:`~wasq_policy.Catalog` node by node, deriving subtree and guaranteed
    quotas and heights as the host does. Nodes get ids in the order they are added; each
    ClusterQueue node also gets a ClusterQueue (ids in order too) with Kueue's default
    preemption and fungibility. Every method returns the builder."""

    def __init__(self) -> None:
        self.raw = wit.Catalog(generation=1)
        self._declared: list[list[tuple[int, int, Optional[int], Optional[int]]]] = []

    def _resource(self, name: str) -> int:
        if name not in self.raw.resources:
            self.raw.resources.append(name)
        return self.raw.resources.index(name)

    def flavor_resources(self, n: int) -> "CatalogBuilder":
        """Adds ``n`` flavors ``f<i>``, each with the resource ``cpu``: flavor-resource ``i``
        is (``f<i>``, ``cpu``)."""
        cpu = self._resource("cpu")
        for _ in range(n):
            flavor = len(self.raw.flavors)
            self.raw.flavors.append(wit.Flavor(f"f{flavor}"))
            self.raw.flavor_resources.append(wit.FlavorResource(flavor, cpu))
        return self

    def flavor(self, name: str, resources: Sequence[str] = ("cpu",)) -> "CatalogBuilder":
        """Adds a flavor with one flavor-resource per resource name, in order."""
        flavor = len(self.raw.flavors)
        self.raw.flavors.append(wit.Flavor(name))
        for r in resources:
            self.raw.flavor_resources.append(wit.FlavorResource(flavor, self._resource(r)))
        return self

    def _key(self, key: str) -> int:
        if key not in self.raw.annotation_keys:
            self.raw.annotation_keys.append(key)
        return self.raw.annotation_keys.index(key)

    def annotation_key(self, key: str) -> "CatalogBuilder":
        """Exposes an annotation key."""
        self._key(key)
        return self

    def flavor_annotation(self, flavor: int, key: str, value: str) -> "CatalogBuilder":
        """Sets an exposed annotation on a flavor."""
        self.raw.flavors[flavor].annotations.append(wit.Annotation(self._key(key), value))
        return self

    def node_annotation(self, node: int, key: str, value: str) -> "CatalogBuilder":
        """Sets an exposed annotation on a quota-tree node."""
        self.raw.nodes[node].annotations.append(wit.Annotation(self._key(key), value))
        return self

    def setting(self, key: str, value: str) -> "CatalogBuilder":
        """Adds a plugin setting (``pluginSettings.<plugin>.<key>``)."""
        self.raw.settings.append(wit.Setting(key, value))
        return self

    def fair_sharing(
        self, strategies: Sequence[wit.FairSharingStrategy] = (
            wit.FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
            wit.FairSharingStrategy.LESS_THAN_INITIAL_SHARE,
        )
    ) -> "CatalogBuilder":
        """Turns fair sharing on."""
        self.raw.fair_sharing = wit.FairSharing(list(strategies))
        return self

    def admission_fair_sharing(
        self, half_life: int = 0, sampling_interval: int = 300_000,
        resource_weights: Sequence[float] = (),
    ) -> "CatalogBuilder":
        """Turns admission fair sharing on."""
        weights = list(resource_weights) + [1.0] * (len(self.raw.resources) - len(resource_weights))
        self.raw.admission_fair_sharing = wit.AdmissionFairSharing(half_life, sampling_interval, weights)
        return self

    def _node(self, name: str, kind: NodeKind, parent: Optional[int]) -> "CatalogBuilder":
        self.raw.nodes.append(wit.Node(name, kind, parent))
        self._declared.append([])
        return self

    def cohort(self, name: str, parent: Optional[int] = None) -> "CatalogBuilder":
        """Adds a Cohort node."""
        return self._node(name, NodeKind.COHORT, parent)

    def cluster_queue(self, name: str, parent: Optional[int] = None, **fields: Any) -> "CatalogBuilder":
        """Adds a ClusterQueue node and its ClusterQueue (``fields``: ``preemption``,
        ``fungibility``, ``queueing_strategy``, ``resource_groups``,
        ``admission_fair_sharing``)."""
        self.raw.cluster_queues.append(wit.ClusterQueue(name, len(self.raw.nodes), **fields))
        return self._node(name, NodeKind.CLUSTER_QUEUE, parent)

    def local_queue(
        self, namespace: str, name: str, cluster_queue: Optional[int] = 0, fair_weight: int = 1000
    ) -> "CatalogBuilder":
        """Adds a LocalQueue (ids in the order added)."""
        self.raw.local_queues.append(wit.LocalQueue(namespace, name, cluster_queue, fair_weight))
        return self

    def quota(
        self, node: int, fr: int, nominal: int,
        borrowing_limit: Optional[int] = None, lending_limit: Optional[int] = None,
    ) -> "CatalogBuilder":
        """Declares a node's quota for a flavor-resource."""
        self._declared[node].append((fr, nominal, borrowing_limit, lending_limit))
        return self

    def build(self) -> Catalog:
        """Derives subtree and guaranteed quotas and heights, and builds the catalog."""
        nodes = self.raw.nodes
        n = len(nodes)
        n_fr = max(
            [len(self.raw.flavor_resources)] + [d[0] + 1 for ds in self._declared for d in ds]
        )
        nominal = [[0] * n_fr for _ in range(n)]
        borrowing: list[list[Optional[int]]] = [[None] * n_fr for _ in range(n)]
        lending: list[list[Optional[int]]] = [[None] * n_fr for _ in range(n)]
        declared = [[False] * n_fr for _ in range(n)]
        for i, ds in enumerate(self._declared):
            for fr, nom, b, l in ds:
                nominal[i][fr], borrowing[i][fr], lending[i][fr] = nom, b, l
                declared[i][fr] = True
        subtree = [list(row) for row in nominal]
        guaranteed = [[0] * n_fr for _ in range(n)]
        height = [0] * n

        def depth(i: int) -> int:
            d = 0
            while nodes[i].parent is not None:
                i = nodes[i].parent
                d += 1
            return d

        for i in sorted(range(n), key=lambda i: -depth(i)):
            for f in range(n_fr):
                limit = lending[i][f]
                guaranteed[i][f] = max(0, subtree[i][f] - limit) if limit is not None else 0
            p = nodes[i].parent
            if p is not None:
                for f in range(n_fr):
                    subtree[p][f] += subtree[i][f] - guaranteed[i][f]
                child = height[i] + 1 if nodes[i].kind == NodeKind.COHORT else 1
                height[p] = max(height[p], child)
        for i, node in enumerate(nodes):
            node.height = height[i]
            node.quotas = [
                wit.Quota(f, nominal[i][f], borrowing[i][f], lending[i][f], subtree[i][f],
                          guaranteed[i][f])
                for f in range(n_fr)
                if declared[i][f] or subtree[i][f] != 0
            ]
        return Catalog(self.raw)


# --------------------------------------------------------------------------------------------
# Workloads


def pod_set(count: int, per_pod: Amounts = (), min_count: Optional[int] = None) -> wit.PodSet:
    """A podSet of ``count`` pods, each requesting ``{resource: amount}``."""
    items = per_pod.items() if isinstance(per_pod, Mapping) else per_pod
    return wit.PodSet(count, min_count, [wit.ResourceAmount(r, a) for r, a in items])


def workload(
    catalog: Catalog,
    id: int,
    cluster_queue: int = 0,
    priority: int = 0,
    created: int = 0,
    *,
    queued: Optional[int] = None,
    local_queue: Optional[int] = None,
    namespace: Optional[str] = None,
    owner: Optional[tuple[str, str, str]] = None,
    labels: Optional[Mapping[str, str]] = None,
    annotations: Optional[Mapping[str, str]] = None,
    requeue_count: int = 0,
    requeue_reason: Optional[wit.RequeueReason] = None,
    pod_sets: Optional[Sequence[wit.PodSet]] = None,
    local_queue_usage: Optional[wit.LocalQueueUsage] = None,
) -> Workload:
    """A workload as the host sends it, read as a :class:`~wasq_policy.Workload`.

    Giving any of ``namespace``, ``owner`` (``(kind, api_version, name)``), ``labels`` or
    ``annotations`` gives it an identity, its strings interned in ``catalog``'s string table
    (what the host sends a policy that needs ``Needs.IDENTITY``); otherwise it has none. It
    has one podSet of one pod requesting nothing unless ``pod_sets`` says otherwise."""
    identity = None
    if namespace is not None or owner is not None or labels or annotations:
        identity = identity_of(catalog, namespace or "", owner, labels, annotations)
    raw = wit.Workload(
        id=id,
        cluster_queue=cluster_queue,
        priority=priority,
        created=created,
        queued=created if queued is None else queued,
        local_queue=local_queue,
        identity=identity,
        requeue_count=requeue_count,
        requeue_reason=requeue_reason,
        pod_sets=list(pod_sets) if pod_sets is not None else [pod_set(1)],
    )
    return Workload(raw, catalog, local_queue_usage)


def identity_of(
    catalog: Catalog,
    namespace: str,
    owner: Optional[tuple[str, str, str]] = None,
    labels: Optional[Mapping[str, str]] = None,
    annotations: Optional[Mapping[str, str]] = None,
) -> wit.WorkloadIdentity:
    """A ``workload-identity``, its strings interned in ``catalog``."""
    s = catalog.intern
    return wit.WorkloadIdentity(
        namespace=s(namespace),
        owner=wit.Owner(s(owner[0]), s(owner[1]), s(owner[2])) if owner is not None else None,
        labels=[wit.Entry(s(k), s(v)) for k, v in (labels or {}).items()],
        annotations=[wit.Entry(s(k), s(v)) for k, v in (annotations or {}).items()],
    )


def local_queue_usage(local_queue: int, weighted: float) -> wit.LocalQueueUsage:
    """Admission fair sharing's figures for a LocalQueue with this weighted usage."""
    return wit.LocalQueueUsage(local_queue, [], [], weighted)


# --------------------------------------------------------------------------------------------
# Ordering


@dataclass
class HeadSpec:
    """A head of a cycle, before it is sent: see :func:`head`."""

    info: wit.HeadInfo
    second_pass: bool = False
    borrowing_level: int = 0
    usage: list[wit.FrAmount] = field(default_factory=list)


def head(
    workload: Workload,
    *,
    second_pass: bool = False,
    borrowing_level: int = 0,
    usage: Amounts = (),
    key: Optional[tuple[int, int, int]] = None,
) -> HeadSpec:
    """``workload`` at the head of its ClusterQueue: on its second pass or not, borrowing
    at a level, its assignment taking ``usage`` (``{fr: amount}``), queued under ``key``
    (default: Kueue's ``(-priority, created, 0)``)."""
    raw = workload.raw
    k = key if key is not None else kueue.sort_key_with_priority(raw.priority, raw.created)
    info = wit.HeadInfo(
        workload=raw.id,
        cluster_queue=raw.cluster_queue,
        local_queue=raw.local_queue,
        priority=raw.priority,
        created=raw.created,
        queued=raw.queued,
        key=wit.SortKey(*k),
        requeue_count=raw.requeue_count,
        requeue_reason=raw.requeue_reason,
        identity=raw.identity,
    )
    return HeadSpec(info, second_pass, borrowing_level, amounts(usage))


def cycle(specs: Sequence[HeadSpec]) -> tuple[wit.NewHeads, list[int], list[wit.HeadGroup], list[wit.HeadUsage]]:
    """What the host sends for a cycle of new heads: ``new-heads`` (starting a table), the
    heads' ids, their groups and their usage."""
    groups: dict[tuple[bool, int], wit.HeadGroup] = {}
    usage = []
    for id, spec in enumerate(specs):
        key = (spec.second_pass, spec.borrowing_level)
        groups.setdefault(key, wit.HeadGroup(spec.second_pass, spec.borrowing_level, [])).heads.append(id)
        if spec.usage:
            usage.append(wit.HeadUsage(id, spec.usage))
    new = wit.NewHeads(0, [s.info for s in specs])
    return new, list(range(len(specs))), list(groups.values()), usage


def heads(
    catalog: Catalog,
    specs: Sequence[HeadSpec],
    tree_usage: Optional[Union[Mapping[int, Amounts], Iterable[wit.NodeUsage]]] = None,
) -> Heads:
    """A cycle's :class:`~wasq_policy.ordering.Heads`, as a policy's ``order_heads``
    receives them; ``tree_usage`` (``{node: {fr: amount}}``) as with ``Needs.TREE_USAGE``."""
    new, ids, groups, usage = cycle(specs)
    table = HeadTable()
    table.add(new)
    tree = _usage_list(tree_usage) if tree_usage is not None else None
    return join_heads(table, catalog, ids, groups, usage, tree)


# --------------------------------------------------------------------------------------------
# Preemption


@dataclass
class CandidateSpec:
    """A candidate before it is sent: its row and how it relates to the preemptor."""

    row: wit.AdmittedRow
    kind: CandidateKind = CandidateKind.SAME_QUEUE
    lca: Optional[int] = None
    evicting: bool = False
    local_queue_usage: Optional[float] = None


def candidate(
    workload: Workload,
    *,
    priority: Optional[int] = None,
    admitted: int = 0,
    usage: Amounts = (),
    kind: CandidateKind = CandidateKind.SAME_QUEUE,
    lca: Optional[int] = None,
    evicting: bool = False,
    local_queue_usage: Optional[float] = None,
) -> CandidateSpec:
    """``workload`` admitted at ``admitted``, holding ``usage`` (``{fr: amount}``), as a
    candidate of ``kind`` (with its identity, queues, times and requeue history)."""
    raw = workload.raw
    row = wit.AdmittedRow(
        workload=raw.id,
        cluster_queue=raw.cluster_queue,
        local_queue=raw.local_queue,
        priority=raw.priority if priority is None else priority,
        created=raw.created,
        admitted=admitted,
        requeue_count=raw.requeue_count,
        requeue_reason=raw.requeue_reason,
        usage=amounts(usage),
        identity=raw.identity,
    )
    return CandidateSpec(row, kind, lca, evicting, local_queue_usage)


def preemption_host_request(
    preemptor: Workload,
    requests: Amounts,
    candidates: Sequence[CandidateSpec],
    *,
    first_row: int = 0,
    needs_preemption: Optional[Sequence[int]] = None,
    usage: Union[Mapping[int, Amounts], Iterable[wit.NodeUsage]] = (),
    usage_kept: bool = False,
    tree_usage: Optional[Union[Mapping[int, Amounts], Iterable[wit.NodeUsage]]] = None,
    now: int = 0,
) -> tuple[wit.NewRows, wit.PreemptionRequest]:
    """What the host sends for one request: the candidates' rows (``new-rows`` at
    ``first_row``) and the request naming them."""
    rows = wit.NewRows(first_row, [c.row for c in candidates])
    groups: dict[tuple[CandidateKind, Optional[int], bool], wit.CandidateGroup] = {}
    shares: dict[int, float] = {}
    for k, c in enumerate(candidates):
        key = (c.kind, c.lca, c.evicting)
        group = groups.setdefault(key, wit.CandidateGroup(c.kind, c.lca, c.evicting, []))
        group.rows.append(first_row + k)
        if c.local_queue_usage is not None and c.row.local_queue is not None:
            shares[c.row.local_queue] = c.local_queue_usage
    req = amounts(requests)
    raw = wit.PreemptionRequest(
        preemptor=preemptor.raw,
        requests=req,
        needs_preemption=list(needs_preemption) if needs_preemption is not None else [r.fr for r in req],
        candidates=[first_row + k for k in range(len(candidates))],
        groups=list(groups.values()),
        local_queue_usage=[wit.LocalQueueShare(lq, w) for lq, w in shares.items()],
        usage_kept=usage_kept,
        usage=_usage_list(usage),
        tree_usage=_usage_list(tree_usage) if tree_usage is not None else None,
        now=now,
    )
    return rows, raw


def preemption_request(
    catalog: Catalog,
    preemptor: Workload,
    requests: Amounts,
    candidates: Sequence[CandidateSpec],
    **options: Any,
) -> PreemptionRequest:
    """A preemption :class:`~wasq_policy.preemption.Request`, as a policy's
    ``select_victims`` receives it: the candidates in the order given, ``usage``
    (``{node: {fr: amount}}``) the request's own (``usage_kept`` false, as for a request made
    by hand). ``options``: ``needs_preemption``, ``usage``, ``tree_usage``, ``now``."""
    options.pop("usage_kept", None)
    new_rows, raw = preemption_host_request(preemptor, requests, candidates, **options)
    table = RowTable()
    table.add(new_rows)
    return PreemptionRequest(raw, catalog, join_candidates(raw, table, catalog))


def usage_table(
    catalog: Catalog, roots: Iterable[int], adds: Iterable[tuple[int, int, int]] = ()
) -> list[wit.NodeUsage]:
    """The ``tree-usage`` the host would send for the trees rooted at ``roots``: each node,
    breadth first, with its non-zero usage of every flavor-resource, after adding each
    ``(node, fr, amount)`` of ``adds`` with Kueue's bubbling."""
    view = QuotaView(catalog)
    for node, fr, amount in adds:
        view.add_usage(node, fr, amount)
    order: list[int] = []
    for root in roots:
        if root in order:
            continue
        queue = deque([root])
        while queue:
            n = queue.popleft()
            order.append(n)
            queue.extend(catalog.children(n))
    n_fr = len(catalog.raw.flavor_resources)
    return [
        wit.NodeUsage(n, [wit.FrAmount(fr, view.usage(n, fr)) for fr in range(n_fr) if view.usage(n, fr)])
        for n in order
    ]


# --------------------------------------------------------------------------------------------
# Flavor assignment


def option(flavor: int, mode: FitMode = FitMode.FIT, borrow_level: int = 0) -> wit.FlavorOption:
    """A flavor the host evaluated."""
    return wit.FlavorOption(flavor, mode, borrow_level)


def flavor_request(
    catalog: Catalog,
    workload: Workload,
    options: Sequence[Optional[wit.FlavorOption]],
    *,
    pod_set: int = 0,
    requests: Amounts = (),
    now: int = 0,
) -> FlavorRequest:
    """A flavor-assignment :class:`~wasq_policy.flavor_assignment.Request`
    (``requests``: ``{resource: amount}``)."""
    items = requests.items() if isinstance(requests, Mapping) else requests
    raw = wit.FlavorRequest(
        workload=workload.raw,
        pod_set=pod_set,
        requests=[wit.ResourceAmount(r, a) for r, a in items],
        options=list(options),
        now=now,
    )
    return FlavorRequest(raw, catalog)


# --------------------------------------------------------------------------------------------
# Placement


def tree(
    topology: Mapping[str, Any], ineligible: Iterable[str] = ()
) -> tuple[list[wit.Domain], list[wit.Leaf], list[str]]:
    """A domain tree from nested mappings: each key a domain's value, each value its
    children, and at the lowest level a list of free capacities per resource column. Returns
    the domains (depth first, in the mappings' order; an inner domain's free capacity the sum
    of its leaves'), the leaves (eligible unless named in ``ineligible``) and the domains'
    names, by index. Every path must be as deep."""
    domains: list[wit.Domain] = []
    leaves: list[wit.Leaf] = []
    names: list[str] = []
    blocked = set(ineligible)

    def add(name: str, value: Any, level: int, parent: Optional[int]) -> list[int]:
        index = len(domains)
        domains.append(wit.Domain(level, parent, []))
        names.append(name)
        if isinstance(value, Mapping):
            total: list[int] = []
            for child, sub in value.items():
                free = add(child, sub, level + 1, index)
                total = [a + b for a, b in zip(total, free)] if total else list(free)
            domains[index].free = total
        else:
            domains[index].free = list(value)
            leaves.append(wit.Leaf(index, name not in blocked))
        return domains[index].free

    for name, value in topology.items():
        add(name, value, 0, None)
    return domains, leaves, names


def placement_request(
    catalog: Catalog,
    workload: Workload,
    topology: Mapping[str, Any],
    *,
    levels: Sequence[str],
    count: int,
    per_pod: Sequence[int],
    resources: Sequence[str] = ("pods",),
    mode: ConstraintMode = ConstraintMode.UNCONSTRAINED,
    level: Optional[int] = None,
    slice_level: Optional[int] = None,
    slice_size: int = 1,
    layers: Iterable[tuple[int, int]] = (),
    leader: Optional[Sequence[int]] = None,
    ineligible: Iterable[str] = (),
    topology_name: str = "topology",
    flavor: int = 0,
    pod_set: int = 0,
    now: int = 0,
) -> PlacementRequest:
    """A placement :class:`~wasq_policy.placement.Request` over the domain tree ``topology``
    (see :func:`tree`), its level and resource names interned. ``level`` and
    ``slice_level`` default to the lowest level (no slices)."""
    domains, leaves, _ = tree(topology, ineligible)
    lowest = len(levels) - 1
    s = catalog.intern
    raw = wit.PlacementRequest(
        workload=workload.raw,
        pod_set=pod_set,
        flavor=flavor,
        topology=s(topology_name),
        level_names=[s(name) for name in levels],
        resource_names=[s(name) for name in resources],
        count=count,
        per_pod=list(per_pod),
        constraint=wit.Constraint(
            level=lowest if level is None else level,
            mode=mode,
            slice_level=lowest if slice_level is None else slice_level,
            slice_size=slice_size,
            layers=[wit.SliceLayer(l, n) for l, n in layers],
        ),
        domains=domains,
        leaves=leaves,
        leader=list(leader) if leader is not None else None,
        now=now,
    )
    return PlacementRequest(raw, catalog)


# --------------------------------------------------------------------------------------------
# Dispatch (MultiKueue)


def worker_queue(
    name: str = "cq",
    *,
    pending: int = 0,
    admitted: int = 0,
    resources: Iterable[tuple[str, str, int, int]] = (),
) -> wit.WorkerQueue:
    """A worker's ClusterQueue as the manager sees it; ``resources`` as ``(flavor, resource,
    nominal, usage)``, in milli-units."""
    return wit.WorkerQueue(
        name=name,
        pending=pending,
        admitted=admitted,
        resources=[wit.WorkerResource(f, r, nominal, usage) for f, r, nominal, usage in resources],
    )


def dispatch_cluster(
    name: str,
    connected: bool = True,
    *,
    labels: Optional[Mapping[str, str]] = None,
    lost_since: Optional[int] = None,
    queue: Optional[wit.WorkerQueue] = None,
    copy_since: Optional[int] = None,
) -> wit.Cluster:
    """A dispatch cluster named ``name`` (a record of ``request.clusters`` as the host sends
    it), connected or not; labels in key order."""
    return wit.Cluster(
        name=name,
        labels=[wit.Label(k, v) for k, v in sorted((labels or {}).items())],
        connected=connected,
        lost_since=lost_since,
        queue=queue,
        copy_since=copy_since,
    )


def dispatch_request(
    now: int = 0,
    clusters: Iterable[wit.Cluster] = (),
    *,
    namespace: str = "ns",
    name: str = "w",
    local_queue: str = "lq",
    priority: int = 0,
    created: int = 0,
    reserved: int = 0,
    pod_sets: Iterable[tuple[str, int, Mapping[str, int]]] = (),
    labels: Optional[Mapping[str, str]] = None,
    nominated: Iterable[int] = (),
    last_nominated: Optional[int] = None,
) -> DispatchRequest:
    """A dispatch :class:`~wasq_policy.dispatch.Request` at ``now`` over ``clusters`` (see
    :func:`dispatch_cluster`) for workload ``ns/w`` (LocalQueue ``lq``), as the host sends
    it: ``pod_sets`` as ``(name, count, {resource: per-pod amount})``, labels and per-pod
    resources in name order. Nothing is nominated unless ``nominated`` says so."""
    workload = wit.DispatchWorkload(
        namespace=namespace,
        name=name,
        local_queue=local_queue,
        priority=priority,
        created=created,
        reserved=reserved,
        pod_sets=[
            wit.DispatchPodSet(
                ps, count, [wit.NamedQuantity(r, a) for r, a in sorted(per_pod.items())]
            )
            for ps, count, per_pod in pod_sets
        ],
        labels=[wit.Label(k, v) for k, v in sorted((labels or {}).items())],
    )
    return DispatchRequest(
        wit.DispatchRequest(
            now=now,
            workload=workload,
            clusters=list(clusters),
            nominated=list(nominated),
            last_nominated=last_nominated,
        )
    )


#: Kueue's limit on ``nominatedClusterNames``: the most nominees an answer may have.
MAX_NOMINEES = 20


def check_dispatch(request: DispatchRequest, answer: DispatchAnswer) -> Optional[str]:
    """Why the host would refuse ``answer`` to ``request``; ``None`` when it accepts it. Its
    checks: at most 20 nominees, each a cluster of the request, named once, connected unless
    already nominated; ``retry_after`` positive when present."""
    if len(answer.nominate) > MAX_NOMINEES:
        return f"nominates {len(answer.nominate)} clusters, more than {MAX_NOMINEES}"
    seen: set[int] = set()
    for i in answer.nominate:
        if not 0 <= i < len(request.clusters):
            return f"nominates cluster {i}, but the request has {len(request.clusters)}"
        c = request.clusters[i]
        if i in seen:
            return f"nominates {c.name} twice"
        seen.add(i)
        if not c.raw.connected and i not in request.nominated:
            return f"nominates {c.name}, which is not connected"
    if answer.retry_after is not None and answer.retry_after <= 0:
        return "asks to be asked again after a time that is not positive"
    return None


def run_dispatch(
    policy: Any, requests: Sequence[DispatchRequest], settings: Any = ()
) -> list[DispatchAnswer]:
    """Runs a dispatch policy class (or the class ``export`` made) as the host does: a new
    instance gets ``settings`` (a mapping or ``(key, value)`` pairs) through ``set-settings``,
    then the requests in one ``dispatch`` call. Answers as the policy gave them."""
    exported = policy if hasattr(policy, "runtime") else _dispatch.export(policy)
    runtime = _dispatch.DispatchRuntime(exported.runtime._factory)
    pairs = settings.items() if isinstance(settings, Mapping) else settings
    runtime.set_settings([wit.Setting(k, v) for k, v in pairs])
    return runtime.dispatch([r.raw for r in requests])


# --------------------------------------------------------------------------------------------
# Logs


@contextlib.contextmanager
def capture_logs() -> Iterator[list[tuple[Level, str]]]:
    """Collects the lines a policy logs, as ``(level, message)``, while the block runs."""
    lines: list[tuple[Level, str]] = []
    previous = _log.set_sink(lambda level, message: lines.append((level, message)))
    try:
        yield lines
    finally:
        _log.set_sink(previous)
