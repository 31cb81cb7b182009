"""The state the contract keeps inside a plugin instance, filled by the host between calls.

Four protocols (``wit/types.wit`` and ``docs/plugin-contract.md``), implemented completely here
so that a policy never sees them:

- :class:`StringTable` — ``types.new-strings``: the strings of workloads' identities;
- :class:`HeadTable` — ``ordering.new-heads``: what ordering reads of each waiting head;
- :class:`RowTable` — ``preemption.new-rows``: what preemption reads of each admitted workload;
- :class:`KeptUsage` — ``preemption.request.usage-kept``: quota usage received, per node and
  flavor-resource, until the next catalog.

Every table only grows; a batch with ``first == 0`` starts it again. A batch whose ``first`` is
neither 0 nor the table's length never comes from the host; the tables then put the batch at
``first`` (dropping what was held from there, padding a gap with empty entries) and read ids
they never received as empty entries, never raising.
"""

from __future__ import annotations

from typing import Any, Generic, Iterable, Optional, TypeVar

from . import wit

T = TypeVar("T")


class _GrowingTable(Generic[T]):
    """A list filled in batches ``(first, values)``; ids never received read as ``empty``."""

    __slots__ = ("_values", "_empty")

    def __init__(self, empty: T) -> None:
        self._values: list[T] = []
        self._empty = empty

    def _add(self, first: int, values: Iterable[T]) -> None:
        del self._values[first:]
        if len(self._values) < first:
            self._values.extend([self._empty] * (first - len(self._values)))
        self._values.extend(values)

    def clear(self) -> None:
        """Drops every entry (the host starts the table again)."""
        self._values.clear()

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, id: int) -> T:
        if 0 <= id < len(self._values):
            return self._values[id]
        return self._empty


class StringTable(_GrowingTable[str]):
    """The instance's string table (``types.new-strings``): namespaces, job kinds,
    apiVersions and names, label and annotation keys and values. An id never sent reads as
    ``""``. It outlives catalogs: a new catalog keeps it."""

    __slots__ = ("_index",)

    def __init__(self) -> None:
        super().__init__("")
        self._index: Optional[dict[str, int]] = None

    def add(self, new: Any) -> None:
        """Adds a ``new-strings`` batch (``first``, ``values``); ``first == 0`` starts again."""
        self._add(new.first, new.values)
        self._index = None

    def clear(self) -> None:
        super().clear()
        self._index = None

    def intern(self, value: str) -> int:
        """The id of ``value``, adding it if new. For tests that build workloads by hand: in a
        plugin the host does the interning."""
        if self._index is None:
            self._index = {}
            for i, s in enumerate(self._values):
                self._index.setdefault(s, i)
        found = self._index.get(value)
        if found is not None:
            return found
        self._values.append(value)
        self._index[value] = len(self._values) - 1
        return len(self._values) - 1


#: What a head the host never sent reads as: workload 0, ClusterQueue 0, nobody in particular.
EMPTY_HEAD = wit.HeadInfo(workload=0, cluster_queue=0)

#: What a row the host never sent reads as: workload 0, ClusterQueue 0, no quota.
EMPTY_ROW = wit.AdmittedRow(workload=0, cluster_queue=0)


class HeadTable(_GrowingTable[Any]):
    """An ordering instance's table of heads (``ordering.new-heads``), by head id."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(EMPTY_HEAD)

    def add(self, new: Any) -> None:
        """Adds a ``new-heads`` batch (``first``, ``heads``); ``first == 0`` starts again."""
        self._add(new.first, new.heads)


class RowTable(_GrowingTable[Any]):
    """A preemption instance's table of admitted workloads (``preemption.new-rows``), by row
    id."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(EMPTY_ROW)

    def add(self, new: Any) -> None:
        """Adds a ``new-rows`` batch (``first``, ``rows``); ``first == 0`` starts again."""
        self._add(new.first, new.rows)


class KeptUsage:
    """The quota usage a preemption instance keeps between requests
    (``preemption.request.usage-kept``).

    Each entry of a request's ``usage`` is its node's whole usage of the request's
    flavor-resources: it replaces what was kept for that node on each of them (one the entry
    does not list is 0 from then on); other flavor-resources and other nodes keep what they
    had. Nodes and flavor-resources the catalog does not have are skipped. Everything is
    dropped at the next catalog (:meth:`reset`).
    """

    __slots__ = ("_usage", "_nodes", "_frs")

    def __init__(self) -> None:
        self._usage: dict[tuple[int, int], int] = {}
        self._nodes = 0
        self._frs = 0

    def reset(self, nodes: int, flavor_resources: int) -> None:
        """Drops everything kept, for a catalog of so many nodes and flavor-resources."""
        self._usage = {}
        self._nodes = nodes
        self._frs = flavor_resources

    def receive(self, usage: Iterable[Any], requests: Iterable[Any]) -> None:
        """Files a request's ``usage`` (``node-usage`` entries) for its ``requests``
        (``fr-amount`` entries: the flavor-resources the entries are about)."""
        requested = [r.fr for r in requests if 0 <= r.fr < self._frs]
        kept = self._usage
        for entry in usage:
            node = entry.node
            if not 0 <= node < self._nodes:
                continue
            for fr in requested:
                kept.pop((node, fr), None)
            for amount in entry.usage:
                if 0 <= amount.fr < self._frs and amount.amount != 0:
                    kept[(node, amount.fr)] = amount.amount

    def get(self, node: int, fr: int) -> int:
        """The node's usage of ``fr`` as received last; 0 when none was."""
        return self._usage.get((node, fr), 0)

    def as_mapping(self) -> dict[tuple[int, int], int]:
        """Everything kept, by ``(node, fr)`` (read-only: the instance's own)."""
        return self._usage
