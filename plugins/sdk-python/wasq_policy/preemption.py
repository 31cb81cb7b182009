"""Preemption policies: subclass :class:`PreemptionPolicy` and export it.

::

    import wasq_policy
    from wasq_policy import Needs, kueue
    from wasq_policy.preemption import KueueAmong, PreemptionPolicy

    class SpareGpuJobs(PreemptionPolicy):
        def needs(self, catalog):
            return kueue.preemption_needs(catalog) | Needs.IDENTITY

        def select_victims(self, catalog, request):
            return KueueAmong(c for c in request.candidates if c.label("gpu") != "true")

    Preemption = wasq_policy.preemption.export(SpareGpuJobs)

The host finds the candidates Kueue's rules make eligible under the ClusterQueue's
``spec.preemption`` (a policy can only be more conservative), sends them in Kueue's candidate
order with the quota figures needed to judge a fit, and checks every answer. A policy answers
:class:`Victims` it chose itself, :data:`NO_VICTIMS`, or :class:`KueueAmong` — Kueue's own
selection restricted to some candidates, which is how a policy composes with Kueue's
preemption without writing it again.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from . import kueue, wit
from ._runtime import Runtime
from .answers import NO_VICTIMS, KueueAmong, NoVictims, PreemptionAnswer, Victims
from .catalog import Catalog, sdk_enum
from .quota import QuotaView
from .tables import KeptUsage, RowTable
from .wit import CandidateKind, Needs
from .workload import Identity, Workload

try:  # Only inside a component build of the preemption-plugin world.
    from wit_world.exports import preemption as _bindings
    from wit_world.imports import types as _types
except ImportError:  # Plain CPython, or another world: the SDK's own records stand in.
    _bindings = wit
    _types = wit

__all__ = [
    "Candidate",
    "CandidateKind",
    "KueueAmong",
    "NO_VICTIMS",
    "NoVictims",
    "PreemptionPolicy",
    "PreemptionRuntime",
    "Request",
    "Victims",
    "export",
]


class Candidate(Identity):
    """An admitted workload that may be preempted: its row of the instance's table of
    admitted workloads (``preemption.admitted-row``) joined with what the request says of it
    (its group's ``kind``, ``lca`` and ``evicting``; its LocalQueue's share). Who it is reads as
    on a :class:`~wasq_policy.Workload`. ``index`` is its position in ``request.candidates``:
    what answers name (answers also take the candidate itself)."""

    __slots__ = ("raw", "index", "kind", "lca", "evicting", "local_queue_usage", "_who",
                 "_catalog", "local_queue")

    def __init__(
        self,
        raw: Any,
        index: int,
        catalog: Catalog,
        kind: CandidateKind = CandidateKind.SAME_QUEUE,
        lca: Optional[int] = None,
        evicting: bool = False,
        local_queue_usage: Optional[float] = None,
    ) -> None:
        #: The ``admitted-row`` record.
        self.raw = raw
        #: Its position in ``request.candidates``.
        self.index = index
        #: How it relates to the preemptor (decides the ``Preempted`` reason).
        self.kind = kind
        #: For another ClusterQueue's candidate: the cohort under which it was found (or,
        #: under fair sharing, the lowest common ancestor); ``None`` for the preemptor's own.
        self.lca = lca
        #: Already being evicted (its quota is held until the eviction completes).
        self.evicting = evicting
        #: Its LocalQueue's admission-fair-sharing usage, when its ClusterQueue uses it.
        self.local_queue_usage = local_queue_usage
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
        """The ClusterQueue it holds its quota in."""
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
    def admitted(self) -> int:
        """When its quota was reserved (admission time)."""
        return self.raw.admitted

    @property
    def requeue_count(self) -> int:
        """How often it was evicted and queued again before this admission."""
        return self.raw.requeue_count

    @property
    def requeue_reason(self) -> Optional[wit.RequeueReason]:
        """Why it was last requeued; ``None`` when it never was."""
        return sdk_enum(wit.RequeueReason, self.raw.requeue_reason)

    @property
    def usage(self) -> list[Any]:
        """The quota it holds: ``fr``, ``amount`` entries (milli-units)."""
        return self.raw.usage

    def __repr__(self) -> str:
        return (
            f"Candidate(index={self.index}, workload={self.workload}, "
            f"cluster_queue={self.cluster_queue}, kind={self.kind.name}, "
            f"priority={self.priority}, admitted={self.admitted}, "
            f"namespace={self.namespace!r})"
        )


class Request:
    """One preemptor and everything needed to choose its victims (``preemption.request``),
    its candidates resolved from the table of admitted workloads and its usage merged with
    the usage the instance keeps."""

    __slots__ = ("raw", "catalog", "preemptor", "candidates", "_kept")

    def __init__(
        self,
        raw: Any,
        catalog: Catalog,
        candidates: list[Candidate],
        kept: Optional[KeptUsage] = None,
    ) -> None:
        #: The request record as the host sent it.
        self.raw = raw
        #: The catalog its indices refer to.
        self.catalog = catalog
        #: The pending workload that needs room.
        self.preemptor = Workload(raw.preemptor, catalog)
        #: The eligible candidates, in Kueue's candidate order (already being evicted first,
        #: other ClusterQueues before the preemptor's own, lower priority first, most recently
        #: admitted first, then by workload handle).
        self.candidates = candidates
        self._kept = kept

    @property
    def requests(self) -> list[Any]:
        """What the preemptor needs per flavor-resource (``fr``, ``amount``) under the
        flavors being tried."""
        return self.raw.requests

    @property
    def needs_preemption(self) -> list[int]:
        """The flavor-resources where it does not fit without preemption."""
        return self.raw.needs_preemption

    @property
    def now(self) -> int:
        """The scheduler's clock at this decision."""
        return self.raw.now

    @property
    def preemptor_node(self) -> Optional[int]:
        """The quota-tree node of the preemptor's ClusterQueue."""
        return self.catalog.cluster_queue_node(self.raw.preemptor.cluster_queue)

    @property
    def usage_kept(self) -> bool:
        """Whether the instance keeps usage (the host: always); see :meth:`quota`."""
        return self.raw.usage_kept

    def quota(self) -> QuotaView:
        """A fresh view of the quota usage this request is about: every node's usage of the
        ``requests``' flavor-resources (with ``usage_kept``, what the instance kept, this
        request's entries included; else the request's own ``usage``). Other
        flavor-resources read as 0. Remove candidates from it to see whether the preemptor
        would fit: ``view.remove_candidate(c); view.fits(request.preemptor_node,
        request.requests)``."""
        frs = [r.fr for r in self.raw.requests]
        if self.raw.usage_kept and self._kept is not None:
            return QuotaView(self.catalog, self._kept.as_mapping(), frs)
        return QuotaView.from_usage(self.catalog, self.raw.usage, frs)

    def usage(self, node: int, fr: int) -> int:
        """A node's usage of a flavor-resource as this request has it (see :meth:`quota`)."""
        return self.quota().usage(node, fr)

    def tree_quota(self) -> Optional[QuotaView]:
        """A view of every node of the preemptor's cohort tree on every flavor-resource
        (``tree-usage``), when the policy needs ``Needs.TREE_USAGE``; else ``None``."""
        tree = self.raw.tree_usage
        return None if tree is None else QuotaView.from_usage(self.catalog, tree)

    def __repr__(self) -> str:
        return f"Request(preemptor={self.preemptor!r}, candidates={len(self.candidates)})"


def join_candidates(raw: Any, rows: RowTable, catalog: Catalog) -> list[Candidate]:
    """A request's candidates: each row of the table (the empty row for a row the table does
    not hold) with its group's facts (a row in no group reads as of the same queue, not
    evicting, without lca; in two, as of the last) and its LocalQueue's share (for a
    LocalQueue the catalog has)."""
    past = len(rows)
    ungrouped = (CandidateKind.SAME_QUEUE, None, False)
    relation_of: dict[int, tuple[CandidateKind, Optional[int], bool]] = {}
    for group in raw.groups:
        relation = (sdk_enum(CandidateKind, group.kind), group.lca, group.evicting)
        for row in group.rows:
            relation_of[min(row, past)] = relation
    shares: dict[int, float] = {}
    for share in raw.local_queue_usage:
        if 0 <= share.local_queue < len(catalog.raw.local_queues):
            shares[share.local_queue] = share.weighted
    candidates = []
    for index, row_id in enumerate(raw.candidates):
        row = rows[row_id]
        kind, lca, evicting = relation_of.get(min(row_id, past), ungrouped)
        lq = row.local_queue
        share = shares.get(lq) if lq is not None else None
        candidates.append(Candidate(row, index, catalog, kind, lca, evicting, share))
    return candidates


class PreemptionPolicy:
    """A preemption victim-selection policy. The default is Kueue's own selection
    (:func:`kueue.select_victims`): override :meth:`select_victims`.

    The SDK builds the policy (with no arguments) on the first call into the plugin and
    keeps it for the instance's lifetime."""

    def catalog_changed(self, catalog: Catalog) -> None:
        """Called after the host sent a new catalog, before the next decision: the place to
        read settings (``catalog.setting("name")``)."""

    def needs(self, catalog: Catalog) -> Needs:
        """What the policy reads beyond its requests, asked after every new catalog:
        ``Needs.IDENTITY`` (who the preemptor and candidates are), ``Needs.POD_SETS`` (the
        preemptor's podSets), ``Needs.TREE_USAGE`` (``request.tree_quota()``; Kueue's fair
        sharing needs it). Default: ``Needs.IDENTITY | Needs.POD_SETS``. A policy answering
        :class:`KueueAmong` must include :func:`kueue.preemption_needs`, so that the host
        has what Kueue's selection reads."""
        return Needs.IDENTITY | Needs.POD_SETS

    def select_victims(self, catalog: Catalog, request: Request) -> PreemptionAnswer:
        """The answer for one preemptor: :class:`Victims`, :data:`NO_VICTIMS` or
        :class:`KueueAmong`. Default: Kueue's victims."""
        return kueue.select_victims(request)


class PreemptionRuntime(Runtime[PreemptionPolicy]):
    """One preemption instance: the policy, the catalog, the string table, the table of
    admitted workloads and the kept quota usage. :func:`export` wraps it for the host; tests
    may drive it with :mod:`wasq_policy.wit` records (what the host sends) directly."""

    kind = "preemption"

    def __init__(self, factory: Callable[[], PreemptionPolicy]) -> None:
        super().__init__(factory)
        self.rows = RowTable()
        self.kept = KeptUsage()

    def set_catalog(self, raw: Any) -> Needs:
        """``set-catalog``: stores the catalog (dropping the rows and the kept usage, which
        name the previous catalog's nodes), tells the policy, answers its needs."""
        self.rows.clear()
        catalog = self.install_catalog(raw)
        self.kept.reset(len(catalog.raw.nodes), len(catalog.raw.flavor_resources))
        policy = self.policy
        self.guard("catalog_changed", lambda: policy.catalog_changed(catalog))
        return Needs(self.guard("needs", lambda: policy.needs(catalog)))

    def select_victims(
        self, strings: Any, rows: Any, requests: Sequence[Any]
    ) -> list[PreemptionAnswer]:
        """``select-victims``: one answer per request, in order. Each request's usage is
        filed before the policy looks at it (the requests after it rely on it), also when the
        policy raises."""
        self.add_strings(strings)
        if rows is not None:
            self.rows.add(rows)
        catalog, policy = self.catalog, self.policy
        answers: list[PreemptionAnswer] = []
        for n, raw in enumerate(requests):
            if raw.usage_kept:
                self.kept.receive(raw.usage, raw.requests)
            request = Request(raw, catalog, join_candidates(raw, self.rows, catalog), self.kept)
            try:
                answer = self.guard("select_victims", lambda: policy.select_victims(catalog, request))
            except BaseException:
                for rest in requests[n + 1 :]:
                    if rest.usage_kept:
                        self.kept.receive(rest.usage, rest.requests)
                raise
            if not isinstance(answer, (NoVictims, Victims, KueueAmong)):
                self.guard("select_victims", lambda: _wrong_answer(answer))
            answers.append(answer)
        return answers


def _wrong_answer(answer: Any) -> None:
    raise TypeError(
        f"select_victims answered {answer!r}: answer Victims(...), NO_VICTIMS or KueueAmong(...)"
    )


def to_wit(answer: PreemptionAnswer, bindings: Any = wit) -> Any:
    """An answer as the WIT ``answer`` variant of ``bindings`` (the generated module in a
    component, :mod:`wasq_policy.wit` otherwise)."""
    if isinstance(answer, Victims):
        return bindings.Answer_Victims(bindings.Victims(list(answer.victims), answer.allow_borrowing))
    if isinstance(answer, KueueAmong):
        return bindings.Answer_KueueAmong(list(answer.candidates))
    return bindings.Answer_NoVictims()


def export(policy: Callable[[], PreemptionPolicy]) -> type:
    """The class componentize-py exports for the ``preemption-plugin`` world. The plugin's
    ``policy.py`` ends with ``Preemption = wasq_policy.preemption.export(MyPolicy)``."""
    runtime = PreemptionRuntime(policy)

    class Preemption:
        """``wasq:policy/preemption``, implemented by the SDK over the policy."""

        def set_catalog(self, catalog: Any) -> Any:
            return _types.Needs(runtime.set_catalog(catalog).value)

        def select_victims(self, strings: Any, rows: Any, requests: Any) -> list[Any]:
            return [to_wit(a, _bindings) for a in runtime.select_victims(strings, rows, requests)]

    Preemption.runtime = runtime  # type: ignore[attr-defined]
    return Preemption
