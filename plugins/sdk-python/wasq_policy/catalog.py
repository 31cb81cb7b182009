"""The catalog a plugin receives from the host, with lookups by name and by index."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any, Iterable, Iterator, Optional, Sequence

from . import wit
from .tables import StringTable


def to_sdk(value: Any) -> Any:
    """A value as the host sent it, with every record and enum made the SDK's own (the
    same-named class of :mod:`wasq_policy.wit`): the catalog is converted once, when it
    arrives, so that a policy compares its enums with the SDK's."""
    if isinstance(value, list):
        return [to_sdk(v) for v in value]
    if isinstance(value, Enum):
        return getattr(wit, type(value).__name__)(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = getattr(wit, type(value).__name__)
        return cls(**{f.name: to_sdk(getattr(value, f.name)) for f in dataclasses.fields(value)})
    return value


def sdk_enum(cls: type, value: Any) -> Any:
    """``value`` (an enum of the generated bindings, of the SDK, or ``None``) as ``cls``."""
    if value is None or isinstance(value, cls):
        return value
    return cls(value.value)


class Catalog:
    """The host's catalog (``types.catalog``) with the lookups policies need.

    Every field of the WIT record reads as an attribute (``catalog.nodes``,
    ``catalog.cluster_queues``, ``catalog.flavors``, ``catalog.settings``, …; records of
    :mod:`wasq_policy.wit`). The SDK keeps the latest catalog the host sent and passes it to
    every policy method, together with the instance's string table, which identities resolve
    through.
    """

    def __init__(self, raw: Optional[wit.Catalog] = None, strings: Optional[StringTable] = None):
        #: The WIT record, converted to :mod:`wasq_policy.wit` classes.
        self.raw: wit.Catalog = to_sdk(raw) if raw is not None else wit.Catalog()
        #: The instance's string table (``new-strings``).
        self.strings: StringTable = strings if strings is not None else StringTable()
        nodes = self.raw.nodes
        self._children: list[list[int]] = [[] for _ in nodes]
        for i, node in enumerate(nodes):
            if node.parent is not None and 0 <= node.parent < len(nodes):
                self._children[node.parent].append(i)
        self._cq_of_node: dict[int, int] = {}
        for i, cq in enumerate(self.raw.cluster_queues):
            self._cq_of_node.setdefault(cq.node, i)
        self._quotas: list[dict[int, wit.Quota]] = [{q.fr: q for q in n.quotas} for n in nodes]
        self._settings: dict[str, str] = {}
        for s in self.raw.settings:
            self._settings.setdefault(s.key, s.value)

    def __getattr__(self, name: str) -> Any:
        # The WIT record's fields (only called for names the class does not define).
        if name == "raw":
            raise AttributeError(name)
        return getattr(self.raw, name)

    def __repr__(self) -> str:
        return (
            f"Catalog(generation={self.raw.generation}, nodes={len(self.raw.nodes)}, "
            f"cluster_queues={len(self.raw.cluster_queues)}, strings={len(self.strings)})"
        )

    # -- strings and settings ----------------------------------------------------------------

    def string(self, id: int) -> str:
        """A string of the instance's table; ``""`` for an id the host never sent."""
        return self.strings[id]

    def intern(self, value: str) -> int:
        """The id of ``value`` in the string table, adding it if new (for tests)."""
        return self.strings.intern(value)

    def setting(self, key: str, default: Optional[str] = None) -> Optional[str]:
        """The value of this plugin's setting ``key`` (``pluginSettings.<plugin>.<key>`` in the
        wasq configuration), or ``default`` when it is not configured."""
        return self._settings.get(key, default)

    def setting_list(self, key: str, default: str = "") -> list[str]:
        """A comma-separated setting as a list, blanks dropped: ``"prod, ,payments"`` →
        ``["prod", "payments"]``; ``default`` is parsed the same way when it is absent."""
        value = self._settings.get(key, default)
        return [part.strip() for part in value.split(",") if part.strip()]

    # -- names -------------------------------------------------------------------------------

    def resource(self, name: str) -> Optional[int]:
        """The id of a resource by name (``cpu``, ``nvidia.com/gpu``)."""
        return _position(self.raw.resources, name)

    def flavor(self, name: str) -> Optional[int]:
        """The id of a ResourceFlavor by name."""
        return _position((f.name for f in self.raw.flavors), name)

    def flavor_resource(self, flavor: int, resource: int) -> Optional[int]:
        """The ``fr-id`` of a (flavor, resource) pair, when some quota names it."""
        for i, fr in enumerate(self.raw.flavor_resources):
            if fr.flavor == flavor and fr.resource == resource:
                return i
        return None

    def flavor_resource_name(self, fr: int) -> str:
        """``flavor/resource`` for a flavor-resource id, for messages."""
        pair = self.raw.flavor_resources[fr]
        return f"{self.raw.flavors[pair.flavor].name}/{self.raw.resources[pair.resource]}"

    def cluster_queue_named(self, name: str) -> Optional[int]:
        """The id of a ClusterQueue by name."""
        return _position((cq.name for cq in self.raw.cluster_queues), name)

    def annotation_key(self, name: str) -> Optional[int]:
        """The index of an exposed annotation key."""
        return _position(self.raw.annotation_keys, name)

    def annotation(self, annotations: Iterable[wit.Annotation], name: str) -> Optional[str]:
        """The value of the annotation ``name`` in a list of a flavor or node, or ``None``
        when it is absent or not exposed."""
        key = self.annotation_key(name)
        if key is None:
            return None
        for a in annotations:
            if a.key == key:
                return a.value
        return None

    def flavor_annotation(self, flavor: int, name: str) -> Optional[str]:
        """An exposed annotation of a ResourceFlavor (for example a cost per hour)."""
        return self.annotation(self.raw.flavors[flavor].annotations, name)

    def node_annotation(self, node: int, name: str) -> Optional[str]:
        """An exposed annotation of a ClusterQueue's or Cohort's node."""
        return self.annotation(self.raw.nodes[node].annotations, name)

    # -- the quota tree ----------------------------------------------------------------------

    def node(self, id: int) -> Optional[wit.Node]:
        """A node of the quota tree, if the index is valid."""
        return self.raw.nodes[id] if 0 <= id < len(self.raw.nodes) else None

    def parent(self, id: int) -> Optional[int]:
        """The parent Cohort of a node (``None`` for a root or an unknown node)."""
        node = self.node(id)
        return None if node is None else node.parent

    def ancestors(self, id: int) -> Iterator[int]:
        """The ancestors of a node, from its parent up to the root (at most as many steps as
        there are nodes, so a malformed catalog cannot loop)."""
        node = self.parent(id)
        for _ in range(len(self.raw.nodes)):
            if node is None:
                return
            yield node
            node = self.parent(node)

    def children(self, id: int) -> Sequence[int]:
        """The children of a Cohort, in increasing id."""
        return self._children[id] if 0 <= id < len(self._children) else ()

    def root(self, id: int) -> int:
        """The root of a node's tree (the node itself when it has no parent)."""
        root = id
        for root in self.ancestors(id):
            pass
        return root

    def is_cohort(self, id: int) -> bool:
        """Whether a node is a Cohort."""
        node = self.node(id)
        return node is not None and node.kind == wit.NodeKind.COHORT

    def quota(self, node: int, fr: int) -> wit.Quota:
        """The quota a node has for a flavor-resource; all zero and unlimited when it lists
        none (or the node does not exist)."""
        if 0 <= node < len(self._quotas):
            found = self._quotas[node].get(fr)
            if found is not None:
                return found
        return wit.Quota(fr=fr)

    def potential_available(self, node: int, fr: int) -> int:
        """Kueue's ``potentialAvailable``: the most a node could ever hold of ``fr``, ignoring
        usage (its guaranteed quota plus what its parent could hold, capped by its borrowing
        limit; a root's subtree quota)."""
        path = [node, *self.ancestors(node)]
        avail = self.quota(path[-1], fr).subtree
        for n in reversed(path[:-1]):
            q = self.quota(n, fr)
            avail = q.guaranteed + avail
            if q.borrowing_limit is not None:
                avail = min(avail, q.subtree + q.borrowing_limit)
        return avail

    # -- queues ------------------------------------------------------------------------------

    def cluster_queue(self, id: int) -> Optional[wit.ClusterQueue]:
        """A ClusterQueue, if the index is valid."""
        cqs = self.raw.cluster_queues
        return cqs[id] if 0 <= id < len(cqs) else None

    def cluster_queue_node(self, id: int) -> Optional[int]:
        """The quota-tree node of a ClusterQueue."""
        cq = self.cluster_queue(id)
        return None if cq is None else cq.node

    def cluster_queue_of_node(self, node: int) -> Optional[int]:
        """The ClusterQueue whose node ``node`` is (``None`` for a Cohort)."""
        return self._cq_of_node.get(node)

    def local_queue(self, id: int) -> Optional[wit.LocalQueue]:
        """A LocalQueue, if the index is valid."""
        lqs = self.raw.local_queues
        return lqs[id] if 0 <= id < len(lqs) else None

    @property
    def fair_sharing_enabled(self) -> bool:
        """Whether Kueue's fair sharing is on."""
        return self.raw.fair_sharing is not None

    def uses_admission_fair_sharing(self, cq: int) -> bool:
        """Whether a ClusterQueue orders its queue by admission fair sharing."""
        queue = self.cluster_queue(cq)
        return (
            self.raw.admission_fair_sharing is not None
            and queue is not None
            and queue.admission_fair_sharing
        )


def _position(values: Iterable[str], name: str) -> Optional[int]:
    for i, value in enumerate(values):
        if value == name:
            return i
    return None
