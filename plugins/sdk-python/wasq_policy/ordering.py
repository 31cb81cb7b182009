"""Admission-ordering policies: subclass :class:`OrderingPolicy` and export it.

::

    import wasq_policy
    from wasq_policy import kueue
    from wasq_policy.ordering import OrderingPolicy, SortKey

    class OldestFirst(OrderingPolicy):
        def sort_key(self, catalog, workload, now):
            return SortKey(workload.created)

    Ordering = wasq_policy.ordering.export(OldestFirst)

The host keeps the queues by the keys the policy gives (:meth:`OrderingPolicy.sort_key`, once
per workload queued) and asks once per cycle in which order to try the ClusterQueues' heads
(:meth:`OrderingPolicy.order_heads`). Both default to Kueue's classical order.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence, Union

from . import kueue, wit
from ._runtime import NO_INDEX, Runtime, check_s64
from .answers import SortKey, _index
from .catalog import Catalog, sdk_enum
from .quota import QuotaView
from .tables import HeadTable
from .wit import Needs
from .workload import Identity, Workload

try:  # Only inside a component build of the ordering-plugin world.
    from wit_world.exports import ordering as _bindings
    from wit_world.imports import types as _types
except ImportError:  # Plain CPython, or another world: the SDK's own records stand in.
    _bindings = wit
    _types = wit

__all__ = ["Head", "Heads", "OrderingPolicy", "SortKey", "Workload", "export", "OrderingRuntime"]


class Head(Identity):
    """One ClusterQueue head of a scheduling cycle, after the host assigned it flavors: its
    entry of the instance's table of heads (``ordering.head-info``) joined with its group
    (``second_pass``, ``borrowing_level``) and, with ``Needs.TREE_USAGE``, the quota its
    assignment takes (``usage``). Who it is reads as on a :class:`~wasq_policy.Workload`."""

    __slots__ = ("raw", "index", "second_pass", "borrowing_level", "usage", "_who", "_catalog",
                 "local_queue")

    def __init__(
        self,
        raw: Any,
        index: int,
        catalog: Catalog,
        second_pass: bool = False,
        borrowing_level: int = 0,
        usage: Optional[list[Any]] = None,
    ) -> None:
        #: The ``head-info`` record.
        self.raw = raw
        #: Its position in ``heads``: what an order names.
        self.index = index
        #: It already holds quota and this is its second pass (Kueue tries these first).
        self.second_pass = second_pass
        #: How high in the cohort tree its assignment borrows (0 = within nominal quota).
        self.borrowing_level = borrowing_level
        #: What its assignment takes (``fr``, ``amount`` entries); empty unless the policy
        #: needs ``Needs.TREE_USAGE``.
        self.usage: list[Any] = usage if usage is not None else []
        self._who = raw.identity
        self._catalog = catalog
        #: Its LocalQueue, when it has one the host knows.
        self.local_queue: Optional[int] = raw.local_queue

    @property
    def workload(self) -> int:
        """The workload's handle."""
        return self.raw.workload

    @property
    def cluster_queue(self) -> int:
        """The ClusterQueue whose head it is."""
        return self.raw.cluster_queue

    @property
    def priority(self) -> int:
        """Effective priority."""
        return self.raw.priority

    @property
    def created(self) -> int:
        """Creation time."""
        return self.raw.created

    @property
    def queued(self) -> int:
        """When it last entered its queue."""
        return self.raw.queued

    @property
    def key(self) -> SortKey:
        """The key it was queued under, as its ClusterQueue's ordering computed it (this
        policy's :meth:`~OrderingPolicy.sort_key`, unless another binding or a failed call):
        read back what the queue order was about instead of remembering it."""
        k = self.raw.key
        return SortKey(k.primary, k.secondary, k.tertiary)

    @property
    def requeue_count(self) -> int:
        """How often it was evicted and queued again (0 = never)."""
        return self.raw.requeue_count

    @property
    def requeue_reason(self) -> Optional[wit.RequeueReason]:
        """Why it was last evicted and queued again; ``None`` when it never was."""
        return sdk_enum(wit.RequeueReason, self.raw.requeue_reason)

    def __repr__(self) -> str:
        return (
            f"Head(index={self.index}, workload={self.workload}, "
            f"cluster_queue={self.cluster_queue}, second_pass={self.second_pass}, "
            f"borrowing_level={self.borrowing_level}, priority={self.priority}, "
            f"created={self.created})"
        )


class Heads(list):  # type: ignore[type-arg]
    """A cycle's heads (a list of :class:`Head`, in the host's order) and, when the policy
    needs ``Needs.TREE_USAGE``, the quota usage of their cohort trees (:attr:`tree_usage`).
    With tree usage the order is speculative: it must assume every head, in turn, takes its
    ``usage``; the host asks again for the rest of a tree when one does not."""

    __slots__ = ("tree_usage",)

    def __init__(self, heads: Iterable[Head] = (), tree_usage: Optional[QuotaView] = None):
        super().__init__(heads)
        #: Usage of every node of the heads' cohort trees on every flavor-resource; ``None``
        #: unless the policy needs ``Needs.TREE_USAGE``.
        self.tree_usage = tree_usage


class OrderingPolicy:
    """An admission-ordering policy. Every method has a default: Kueue's classical order
    (without fair sharing or admission fair sharing). Override what the policy changes.

    The SDK builds the policy (with no arguments) on the first call into the plugin and
    keeps it for the instance's lifetime; keep state in its attributes. The host may replace
    an instance at any time (after a trap, say): state is a cache, never the truth."""

    def catalog_changed(self, catalog: Catalog) -> None:
        """Called after the host sent a new catalog, before the next decision: the place to
        read settings (``catalog.setting("name")``)."""

    def needs(self, catalog: Catalog) -> Needs:
        """What the policy reads beyond workloads and heads, asked after every new catalog
        (after :meth:`catalog_changed`): ``Needs.IDENTITY`` (who workloads are),
        ``Needs.POD_SETS`` (what they request), ``Needs.LOCAL_QUEUE_USAGE``
        (``workload.local_queue_usage`` in :meth:`sort_key`), ``Needs.TREE_USAGE``
        (``heads.tree_usage``). The host prepares and sends only that. Default:
        ``Needs.IDENTITY | Needs.POD_SETS`` (Kueue's own, :func:`kueue.ordering_needs`,
        reads neither)."""
        return Needs.IDENTITY | Needs.POD_SETS

    def sort_key(self, catalog: Catalog, workload: Workload, now: int) -> Union[SortKey, tuple]:
        """The key a workload is queued under; smallest first. A :class:`SortKey` or a tuple
        of one to three integers (missing parts are 0). ``now`` is the scheduler's clock at
        queueing time. Default: Kueue's ``(-priority, created, 0)``."""
        return kueue.sort_key(workload)

    def order_heads(self, catalog: Catalog, heads: Heads, now: int) -> Sequence[Union[int, Head]]:
        """The order in which this cycle's heads are tried, first first: every head exactly
        once, as positions in ``heads`` or the heads themselves. Default: Kueue's classical
        order (:func:`kueue.order_heads`)."""
        return kueue.order_heads(heads)


def _sort_key(value: Any) -> SortKey:
    """A policy's key as a :class:`SortKey` of 64-bit integers."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    parts = tuple(value)
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"a sort key has one to three parts, not {value!r}")
    parts += (0,) * (3 - len(parts))
    return SortKey(*(check_s64(p, "sort key part") for p in parts))


def join_heads(
    table: HeadTable,
    catalog: Catalog,
    heads: Sequence[int],
    groups: Sequence[Any],
    head_usage: Optional[Sequence[Any]],
    tree_usage: Optional[Sequence[Any]],
) -> Heads:
    """A cycle's heads (ids into the table of heads) joined with their groups and usage. A
    head in no group reads as a first pass at borrowing level 0 (in two, as of the last); an
    id the table does not hold reads as the empty head."""
    past = len(table)
    group_of: dict[int, Any] = {}
    for group in groups:
        for id in group.heads:
            group_of[min(id, past)] = group
    usage_of: dict[int, list[Any]] = {}
    for entry in head_usage or ():
        usage_of[min(entry.head, past)] = entry.usage
    received = Heads()
    for index, id in enumerate(heads):
        slot = min(id, past)
        group = group_of.get(slot)
        received.append(
            Head(
                table[id],
                index,
                catalog,
                group.second_pass if group is not None else False,
                group.borrowing_level if group is not None else 0,
                usage_of.get(slot),
            )
        )
    if tree_usage is not None:
        received.tree_usage = QuotaView.from_usage(catalog, tree_usage)
    return received


class OrderingRuntime(Runtime[OrderingPolicy]):
    """One ordering instance: the policy, the catalog, the string table and the table of
    heads. :func:`export` wraps it for the host; tests may drive it with
    :mod:`wasq_policy.wit` records (what the host sends) directly."""

    kind = "ordering"

    def __init__(self, factory: Callable[[], OrderingPolicy]) -> None:
        super().__init__(factory)
        self.heads = HeadTable()

    def set_catalog(self, raw: Any) -> Needs:
        """``set-catalog``: stores the catalog, tells the policy, answers its needs."""
        # Heads name the previous catalog's queues; the host starts a new table too.
        self.heads.clear()
        catalog = self.install_catalog(raw)
        policy = self.policy
        self.guard("catalog_changed", lambda: policy.catalog_changed(catalog))
        return Needs(self.guard("needs", lambda: policy.needs(catalog)))

    def sort_keys(
        self, strings: Any, workloads: Sequence[Any], local_queue_usage: Sequence[Any], now: int
    ) -> list[SortKey]:
        """``sort-keys``: one key per workload, in order."""
        self.add_strings(strings)
        by_local_queue: dict[int, Any] = {}
        for usage in local_queue_usage:
            by_local_queue.setdefault(usage.local_queue, usage)
        catalog, policy = self.catalog, self.policy

        def run() -> list[SortKey]:
            keys = []
            for raw in workloads:
                lq = raw.local_queue
                wl = Workload(raw, catalog, by_local_queue.get(lq) if lq is not None else None)
                keys.append(_sort_key(policy.sort_key(catalog, wl, now)))
            return keys

        return self.guard("sort_key", run)

    def order_heads(
        self,
        strings: Any,
        new_heads: Any,
        heads: Sequence[int],
        groups: Sequence[Any],
        head_usage: Optional[Sequence[Any]],
        tree_usage: Optional[Sequence[Any]],
        now: int,
    ) -> list[int]:
        """``order-heads``: the heads' workloads in the order the policy gives. A position
        that names no head is answered as no workload (the host refuses the answer)."""
        self.add_strings(strings)
        if new_heads is not None:
            self.heads.add(new_heads)
        received = join_heads(self.heads, self.catalog, heads, groups, head_usage, tree_usage)
        catalog, policy = self.catalog, self.policy
        order = self.guard("order_heads", lambda: list(policy.order_heads(catalog, received, now)))
        workloads = [h.workload for h in received]
        answer = []
        for item in order:
            position = _index(item)
            answer.append(workloads[position] if 0 <= position < len(workloads) else NO_INDEX)
        return answer


def export(policy: Callable[[], OrderingPolicy]) -> type:
    """The class componentize-py exports for the ``ordering-plugin`` world. The plugin's
    ``policy.py`` ends with ``Ordering = wasq_policy.ordering.export(MyPolicy)``; ``policy``
    is the policy class (or any callable building one)."""
    runtime = OrderingRuntime(policy)

    class Ordering:
        """``wasq:policy/ordering``, implemented by the SDK over the policy."""

        def set_catalog(self, catalog: Any) -> Any:
            return _types.Needs(runtime.set_catalog(catalog).value)

        def sort_keys(self, strings: Any, workloads: Any, local_queue_usage: Any, now: int) -> Any:
            keys = runtime.sort_keys(strings, workloads, local_queue_usage, now)
            return [_bindings.SortKey(k.primary, k.secondary, k.tertiary) for k in keys]

        def order_heads(
            self,
            strings: Any,
            new_heads: Any,
            heads: Any,
            groups: Any,
            head_usage: Any,
            tree_usage: Any,
            now: int,
        ) -> list[int]:
            return runtime.order_heads(strings, new_heads, heads, groups, head_usage, tree_usage, now)

    Ordering.runtime = runtime  # type: ignore[attr-defined]
    return Ordering
