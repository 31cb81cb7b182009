"""Kueue's quota arithmetic over the catalog's quota tree and the usage a request carries, so
that a policy can read usage, simulate removing (or adding) workloads and ask whether one fits.

The formulas are Kueue's (``pkg/cache/scheduler/resource_node.go``), as the host computes them:

- ``local_available(n) = max(0, guaranteed − usage)``;
- ``available(n)``: a root's ``subtree − usage``; below, ``local_available`` plus what the
  parent has available, capped by the borrowing limit at ``subtree − guaranteed −
  max(0, usage − guaranteed) + borrowing_limit``; clamped at 0;
- adding usage at a node bubbles up to its parent only the part above its guaranteed quota;
- a ClusterQueue borrows when its usage exceeds its nominal quota, a Cohort when its usage
  exceeds its subtree quota.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from . import wit
from .catalog import Catalog


class QuotaView:
    """Usage of the quota tree's nodes per flavor-resource, over the catalog's quotas.

    A view reads its usage from ``base`` (``(node, fr) → amount``; absent is 0) and keeps its
    own changes apart, so that a search can remove and restore candidates without touching
    what the SDK keeps. When ``frs`` is given, only those flavor-resources are known (a
    preemption request carries usage of its ``requests``' flavor-resources only): others read
    as 0 and changes to them are ignored.

    Views are made by the SDK: ``request.quota()`` (preemption), ``heads.tree_usage``
    (ordering with ``Needs.TREE_USAGE``), ``request.tree_quota()``; or from a list of
    ``node-usage`` entries with :meth:`from_usage`. A view made during a call is valid during
    that call.
    """

    __slots__ = ("catalog", "_base", "_own", "_frs")

    def __init__(
        self,
        catalog: Catalog,
        base: Optional[Mapping[tuple[int, int], int]] = None,
        frs: Optional[Iterable[int]] = None,
    ) -> None:
        #: The catalog the view reads quotas from.
        self.catalog = catalog
        self._base: Mapping[tuple[int, int], int] = base if base is not None else {}
        self._own: dict[tuple[int, int], int] = {}
        self._frs: Optional[frozenset[int]] = frozenset(frs) if frs is not None else None

    @classmethod
    def from_usage(
        cls, catalog: Catalog, usage: Iterable[Any], frs: Optional[Iterable[int]] = None
    ) -> "QuotaView":
        """The view of ``node-usage`` entries (a ``tree-usage``, or a request's own
        ``usage``): each entry is its node's usage (a flavor-resource it does not list is 0);
        a node listed twice takes its later entry."""
        by_node: dict[int, dict[int, int]] = {}
        for entry in usage:
            # A later entry of a node replaces the earlier one whole.
            by_node[entry.node] = {amount.fr: amount.amount for amount in entry.usage}
        table = {
            (node, fr): amount for node, amounts in by_node.items() for fr, amount in amounts.items()
        }
        return cls(catalog, table, frs)

    def copy(self) -> "QuotaView":
        """An independent view with the same usage (changes to either stay apart)."""
        view = QuotaView(self.catalog, self._base, self._frs)
        view._own = dict(self._own)
        return view

    @property
    def flavor_resources(self) -> Optional[frozenset[int]]:
        """The flavor-resources the view knows; ``None`` for all of them."""
        return self._frs

    def tracks(self, fr: int) -> bool:
        """Whether the view knows the usage of ``fr``."""
        return self._frs is None or fr in self._frs

    # -- reading -----------------------------------------------------------------------------

    def usage(self, node: int, fr: int) -> int:
        """A node's usage of ``fr`` (for a Cohort: what its children use beyond their
        guaranteed quota)."""
        if self._frs is not None and fr not in self._frs:
            return 0
        key = (node, fr)
        own = self._own.get(key)
        return own if own is not None else self._base.get(key, 0)

    def quota(self, node: int, fr: int) -> wit.Quota:
        """The node's quota figures for ``fr`` (see :meth:`Catalog.quota`)."""
        return self.catalog.quota(node, fr)

    def local_available(self, node: int, fr: int) -> int:
        """What is left of the node's guaranteed quota (the part never lent out): ≥ 0."""
        return max(0, self.quota(node, fr).guaranteed - self.usage(node, fr))

    def available(self, node: int, fr: int) -> int:
        """What the node could still take of ``fr``, borrowing as far as its limits and its
        ancestors allow: ≥ 0."""
        path = [node, *self.catalog.ancestors(node)]
        top = path[-1]
        avail = self.quota(top, fr).subtree - self.usage(top, fr)
        for n in reversed(path[:-1]):
            q = self.quota(n, fr)
            used = self.usage(n, fr)
            from_parent = avail
            if q.borrowing_limit is not None:
                stored_in_parent = q.subtree - q.guaranteed
                used_in_parent = max(0, used - q.guaranteed)
                from_parent = min(from_parent, stored_in_parent - used_in_parent + q.borrowing_limit)
            avail = max(0, q.guaranteed - used) + from_parent
        return max(0, avail)

    def potential_available(self, node: int, fr: int) -> int:
        """Kueue's ``potentialAvailable`` (independent of usage)."""
        return self.catalog.potential_available(node, fr)

    def borrowing(self, node: int, fr: int, extra: int = 0) -> bool:
        """Whether the node is (with ``extra`` more of ``fr``, would be) over its own quota:
        a ClusterQueue past its nominal quota, a Cohort past its subtree quota."""
        q = self.quota(node, fr)
        limit = q.subtree if self.catalog.is_cohort(node) else q.nominal
        return limit < self.usage(node, fr) + extra

    def within_nominal(self, node: int, frs: Iterable[int]) -> bool:
        """Kueue's ``IsWithinNominalInResources``: usage ≤ subtree quota for every ``fr``."""
        return all(self.usage(node, fr) <= self.quota(node, fr).subtree for fr in frs)

    def fits(self, node: int, requests: Iterable[Any], allow_borrowing: bool = True) -> bool:
        """Kueue's ``workloadFits``: every request (``fr``, ``amount``) is within what the
        node has available and, unless ``allow_borrowing``, does not take the node past its
        nominal quota."""
        return all(
            (allow_borrowing or not self.borrowing(node, r.fr, r.amount))
            and r.amount <= self.available(node, r.fr)
            for r in requests
        )

    # -- changing ----------------------------------------------------------------------------

    def set_usage(self, node: int, fr: int, value: int) -> None:
        """Sets a node's usage as is, without bubbling (to load a snapshot)."""
        if self.tracks(fr):
            self._own[(node, fr)] = value

    def add_usage(self, node: int, fr: int, delta: int) -> None:
        """Adds ``delta`` (negative to remove) to the node's usage of ``fr``, bubbling up only
        the part above each node's guaranteed quota. Adding back what was removed, in any
        order, restores every node's usage."""
        if not self.tracks(fr):
            return
        current: Optional[int] = node
        for _ in range(len(self.catalog.nodes) + 1):
            if current is None or delta == 0:
                return
            before = self.usage(current, fr)
            after = before + delta
            self._own[(current, fr)] = after
            guaranteed = self.quota(current, fr).guaranteed
            delta = max(0, after - guaranteed) - max(0, before - guaranteed)
            current = self.catalog.parent(current)

    def add_workload(self, node: int, usage: Iterable[Any]) -> None:
        """Adds a workload's usage (``fr``, ``amount`` entries) at a node."""
        for u in usage:
            self.add_usage(node, u.fr, u.amount)

    def remove_workload(self, node: int, usage: Iterable[Any]) -> None:
        """Removes a workload's usage at a node."""
        for u in usage:
            self.add_usage(node, u.fr, -u.amount)

    def remove_candidate(self, candidate: Any) -> None:
        """Removes a preemption candidate's usage from its ClusterQueue (as if evicted)."""
        node = self.catalog.cluster_queue_node(candidate.cluster_queue)
        if node is not None:
            self.remove_workload(node, candidate.usage)

    def restore_candidate(self, candidate: Any) -> None:
        """Puts a removed candidate's usage back."""
        node = self.catalog.cluster_queue_node(candidate.cluster_queue)
        if node is not None:
            self.add_workload(node, candidate.usage)
