"""Dispatch policies (MultiKueue, added in ``wasq:policy@1.1.0``): subclass
:class:`DispatchPolicy` and export it.

::

    import wasq_policy
    from wasq_policy.dispatch import DispatchPolicy, Only, all_at_once

    class GpuOnly(DispatchPolicy):
        def dispatch(self, settings, request):
            return all_at_once(Only(request, lambda c: c.label("accelerator") == "gpu"))

    Dispatch = wasq_policy.dispatch.export(GpuOnly)

The host asks which worker clusters get a copy of a workload that reserved quota behind a
MultiKueue admission check: when its quota is reserved, when a worker connects or is lost,
and when the time an answer asked for comes (:attr:`Answer.retry_after`). A request carries
the workload (names, podSets, labels), every cluster of its MultiKueueConfig in the
configuration's order (name, labels, connected or not, the worker's ClusterQueue when the
manager sees it, whether the workload has a copy there) and the nominees so far. The answer
is the whole list of nominees, as indices into ``request.clusters``; the host checks that
each is connected (unless already nominated), named once, at most 20 of them, and otherwise
lets the built-in dispatcher decide.

Unlike the other kinds, a dispatch request carries names as plain strings: there is no
catalog and no string table. The plugin's settings arrive once per instance
(:meth:`DispatchPolicy.settings_changed`).

Kueue's two dispatchers are here to reuse (:func:`all_at_once`, :func:`incremental`), over
the whole request or over the clusters a policy keeps (:class:`Only`). They decide exactly as
the Rust SDK's and the host's (``wasq-kueue``'s ``dispatch``).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from . import wit
from ._runtime import S64_MAX, S64_MIN, Runtime, check_s64
from .answers import _index

try:  # Only inside a component build of the dispatch-plugin world.
    from wit_world.exports import dispatch as _bindings
except ImportError:  # Plain CPython, or another world: the SDK's own records stand in.
    _bindings = None

__all__ = [
    "DEFAULT_STEP",
    "ROUND_MS",
    "Answer",
    "Cluster",
    "DispatchPolicy",
    "DispatchRuntime",
    "Only",
    "Request",
    "Settings",
    "Workload",
    "all_at_once",
    "export",
    "incremental",
    "parse_step",
]

#: Kueue's incremental dispatcher: clusters nominated per round (``stepSize``, default 3).
DEFAULT_STEP = 3
#: Kueue's ``incrementalDispatcherRoundTimeout``: a round lasts 5 minutes (milliseconds).
ROUND_MS = 5 * 60 * 1000


def _wrap_s64(value: int) -> int:
    """``value`` wrapped to an ``s64``, as Rust's release arithmetic does."""
    return (value - S64_MIN) % 2**64 + S64_MIN


def _labels(raw: Iterable[Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for label in raw:
        out.setdefault(label.key, label.value)
    return out


# --------------------------------------------------------------------------------------------
# Settings


class Settings:
    """The plugin's settings (``pluginSettings.<name>`` in the wasq configuration, or a
    QueuePolicy's ``settings``), as written there, in the configuration's order.

    ``Settings({"dispatcher": "incremental"})`` or ``Settings([("stepSize", "2")])`` builds
    some for tests."""

    __slots__ = ("_pairs",)

    def __init__(self, pairs: Union[Mapping[str, str], Iterable[Any]] = ()) -> None:
        items = pairs.items() if isinstance(pairs, Mapping) else pairs
        self._pairs: list[tuple[str, str]] = []
        for item in items:
            if isinstance(item, tuple):
                key, value = item
            else:  # A `setting` record.
                key, value = item.key, item.value
            self._pairs.append((str(key), str(value)))

    def get(self, key: str, default: Optional[str] = None) -> Optional[str]:
        """The value of setting ``key``, or ``default`` when it is not configured."""
        for k, v in self._pairs:
            if k == key:
                return v
        return default

    def get_list(self, key: str, default: str = "") -> list[str]:
        """A comma-separated setting as a list, blanks dropped (``default`` when absent)."""
        value = self.get(key, default)
        return [part.strip() for part in (value or "").split(",") if part.strip()]

    def all(self) -> list[tuple[str, str]]:
        """Every setting, as ``(key, value)``, in the configuration's order."""
        return list(self._pairs)

    def __len__(self) -> int:
        return len(self._pairs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self._pairs == other._pairs

    def __repr__(self) -> str:
        return f"Settings({self._pairs!r})"


_U32 = re.compile(r"\+?[0-9]+")


def parse_step(value: Optional[str]) -> Optional[int]:
    """A ``stepSize`` as Rust's ``str::parse::<u32>`` reads it (digits, an optional ``+``, at
    most 4294967295), when it is positive; ``None`` otherwise."""
    if value is None or not _U32.fullmatch(value):
        return None
    step = int(value)
    return step if 0 < step < 2**32 else None


# --------------------------------------------------------------------------------------------
# The request


class Workload:
    """The workload to dispatch (``dispatch.workload``), as the manager holds it."""

    __slots__ = ("raw", "labels")

    def __init__(self, raw: Any) -> None:
        #: The record as the host sent it.
        self.raw = raw
        #: The Workload's labels the plugin's allow-list passes (every key under
        #: ``kueue.x-k8s.io/`` and ``wasq.dev/``, plus ``pluginMetadata.<name>.labels``), in
        #: key order.
        self.labels: dict[str, str] = _labels(raw.labels)

    @property
    def namespace(self) -> str:
        """The Workload's namespace (the same on every worker)."""
        return self.raw.namespace

    @property
    def name(self) -> str:
        """The Workload's name (its copies on the workers have the same)."""
        return self.raw.name

    @property
    def local_queue(self) -> str:
        """Its LocalQueue's name."""
        return self.raw.local_queue

    @property
    def priority(self) -> int:
        """Its priority (the priority class value)."""
        return self.raw.priority

    @property
    def created(self) -> int:
        """Creation time (ms)."""
        return self.raw.created

    @property
    def reserved(self) -> int:
        """When it reserved quota on the manager (ms)."""
        return self.raw.reserved

    @property
    def pod_sets(self) -> list[Any]:
        """Its podSets, in the Workload's order: ``name``, ``count``, ``per_pod`` (each a
        ``name`` and an ``amount`` in milli-units, in name order)."""
        return list(self.raw.pod_sets)

    def label(self, key: str) -> Optional[str]:
        """The value of the Workload's label ``key`` (if the allow-list passes it)."""
        return self.labels.get(key)

    def total_request(self, resource: str) -> int:
        """What all its pods request of ``resource`` (count × per pod), in milli-units."""
        total = 0
        for p in self.raw.pod_sets:
            for q in p.per_pod:
                if q.name == resource:
                    total += p.count * q.amount
        return total

    def __repr__(self) -> str:
        return f"Workload({self.namespace}/{self.name})"


class Cluster:
    """One candidate worker (``dispatch.cluster``); ``index`` is its position in
    ``request.clusters``, what answers name."""

    __slots__ = ("raw", "index", "labels", "connected")

    def __init__(self, raw: Any, index: int, connected: Optional[bool] = None) -> None:
        #: The record as the host sent it.
        self.raw = raw
        #: Its position in ``request.clusters``.
        self.index = index
        #: Its MultiKueueCluster's labels (all of them), in key order.
        self.labels: dict[str, str] = _labels(raw.labels)
        #: Whether the manager has a working connection to it. Only connected clusters may
        #: be added to the nominees (one already nominated may stay).
        self.connected: bool = bool(raw.connected) if connected is None else connected

    @property
    def name(self) -> str:
        """Its MultiKueueCluster's name."""
        return self.raw.name

    @property
    def lost_since(self) -> Optional[int]:
        """Since when its connection is lost; ``None`` when connected (or unknown)."""
        return self.raw.lost_since

    @property
    def queue(self) -> Optional[Any]:
        """The worker's ClusterQueue for the workload (``name``, ``pending``, ``admitted``,
        ``resources``: ``flavor``, ``resource``, ``nominal``, ``usage``); ``None`` when the
        manager cannot see it."""
        return self.raw.queue

    @property
    def copy_since(self) -> Optional[int]:
        """Since when the workload has a copy there; ``None``: no copy."""
        return self.raw.copy_since

    def label(self, key: str) -> Optional[str]:
        """The value of its MultiKueueCluster's label ``key``."""
        return self.labels.get(key)

    def __repr__(self) -> str:
        state = "connected" if self.connected else "not connected"
        return f"Cluster({self.index}: {self.name}, {state})"


class Request:
    """One question (``dispatch.request``): the workload, its candidate clusters, and what
    was nominated so far. Clusters are named by their index in ``clusters``."""

    __slots__ = ("raw", "workload", "clusters", "nominated")

    def __init__(self, raw: Any) -> None:
        #: The record as the host sent it.
        self.raw = raw
        #: The workload to dispatch.
        self.workload = Workload(raw.workload)
        #: The clusters of its MultiKueueConfig, in the configuration's order.
        self.clusters: list[Cluster] = [Cluster(c, i) for i, c in enumerate(raw.clusters)]
        #: The nominees so far, in nomination order (indices into ``clusters``; a nominee may
        #: have been lost since).
        self.nominated: list[int] = list(raw.nominated)

    @property
    def now(self) -> int:
        """The clock (ms): wall time in ``wasq controller``, virtual in ``wasq simulate``."""
        return self.raw.now

    @property
    def last_nominated(self) -> Optional[int]:
        """When the nominees last changed (the start of an incremental dispatcher's round);
        ``None`` before the first nomination."""
        return self.raw.last_nominated

    def cluster(self, name: str) -> Optional[int]:
        """The index of the cluster named ``name``."""
        for c in self.clusters:
            if c.name == name:
                return c.index
        return None

    def __repr__(self) -> str:
        return (f"Request(now={self.now}, workload={self.workload!r}, "
                f"clusters={self.clusters!r}, nominated={self.nominated})")


class Only:
    """A request's clusters with those ``keep`` refuses taken as not connected: Kueue's
    dispatchers over part of the clusters, the indices still the request's.

    ::

        # Kueue's all-at-once, but only to clusters labelled for GPUs.
        answer = all_at_once(Only(request, lambda c: c.label("accelerator") == "gpu"))
    """

    __slots__ = ("request", "clusters")

    def __init__(self, request: Request, keep: Callable[[Cluster], Any]) -> None:
        #: The request.
        self.request = request
        #: Its clusters, each connected only if it is and ``keep`` keeps it.
        self.clusters: list[Cluster] = [
            Cluster(c.raw, c.index, c.connected and bool(keep(c))) for c in request.clusters
        ]


# --------------------------------------------------------------------------------------------
# The answer


class Answer:
    """The nominees for one request (``dispatch.answer``): every nominee, as clusters or
    their indices into ``request.clusters`` — it replaces the nominees so far (a cluster left
    out loses its copy); empty: no cluster gets a copy for now. ``retry_after``: ask again
    after this many milliseconds even if nothing changes (positive); ``None``: only when
    something does."""

    __slots__ = ("nominate", "retry_after")

    def __init__(self, nominate: Iterable[Any] = (), retry_after: Optional[int] = None) -> None:
        #: Indices into ``request.clusters``, in the order given.
        self.nominate: list[int] = [_index(c) for c in nominate]
        #: Milliseconds until the host asks again; ``None``: only when something changes.
        self.retry_after: Optional[int] = (
            None if retry_after is None else check_s64(retry_after, "retry_after")
        )

    def __repr__(self) -> str:
        return f"Answer({self.nominate}, retry_after={self.retry_after})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Answer)
            and self.nominate == other.nominate
            and self.retry_after == other.retry_after
        )

    def __hash__(self) -> int:
        return hash((tuple(self.nominate), self.retry_after))


# --------------------------------------------------------------------------------------------
# Kueue's dispatchers


Workers = Union[Request, Only]


def all_at_once(workers: Workers) -> Answer:
    """Kueue's ``multikueue-dispatcher-all-at-once``: every connected cluster of ``workers``
    (a :class:`Request` or :class:`Only`), by name; asked again only when something
    changes."""
    connected = [c for c in workers.clusters if c.connected]
    # Python compares strings by code point: the order of Rust's byte-wise comparison.
    connected.sort(key=lambda c: c.name)
    return Answer([c.index for c in connected])


def incremental(workers: Workers, request: Request, step: int = DEFAULT_STEP) -> Answer:
    """Kueue's ``multikueue-dispatcher-incremental`` with ``step`` clusters per five-minute
    round (:data:`DEFAULT_STEP` is Kueue's 3): the nominees of ``request`` stay while a round
    lasts, then the next ``step`` connected clusters of ``workers`` not yet nominated, in the
    configuration's order, are added (earlier nominees are never taken back)."""
    nominated = list(request.nominated)
    started = request.last_nominated
    if started is not None:
        left = _wrap_s64(min(started + ROUND_MS, S64_MAX) - request.now)
        if left > 0:
            return Answer(nominated, left)
    clusters = workers.clusters
    batch = [c.index for c in clusters if c.index not in nominated and c.connected]
    batch = batch[: max(step, 1)]
    if not batch:
        # Nothing left to add now; a cluster that connects later is asked about then.
        return Answer(nominated)
    nominate = nominated + batch
    more = any(i not in nominate for i in range(len(clusters)))
    return Answer(nominate, ROUND_MS if more else None)


# --------------------------------------------------------------------------------------------
# The policy


class DispatchPolicy:
    """A dispatch policy: override :meth:`dispatch` (and :meth:`settings_changed` to read
    settings). The SDK builds it (no arguments) on the first call into the plugin."""

    def settings_changed(self, settings: Settings) -> None:
        """Called with the plugin's settings before its first request: the place to read
        them. Default: nothing."""

    def dispatch(self, settings: Settings, request: Request) -> Answer:
        """Every nominee (each connected, each once, at most 20) and when to be asked again.
        :func:`all_at_once` and :func:`incremental` are Kueue's answers. Default: Kueue's
        all-at-once."""
        return all_at_once(request)


class DispatchRuntime(Runtime[DispatchPolicy]):
    """One dispatch instance: the policy and its settings."""

    kind = "dispatch"

    def __init__(self, factory: Callable[[], DispatchPolicy]) -> None:
        super().__init__(factory)
        self.settings = Settings()

    def set_settings(self, settings: Sequence[Any]) -> None:
        """``set-settings``: stores the settings and tells the policy."""
        self.settings = Settings(settings)
        policy, stored = self.policy, self.settings
        self.guard("settings_changed", lambda: policy.settings_changed(stored))

    def dispatch(self, requests: Sequence[Any]) -> list[Answer]:
        """``dispatch``: one answer per request, in order."""
        policy, settings = self.policy, self.settings

        def run() -> list[Answer]:
            answers = []
            for raw in requests:
                request = Request(raw)
                answer = policy.dispatch(settings, request)
                if not isinstance(answer, Answer):
                    raise TypeError(f"dispatch answered {answer!r}: answer Answer(nominate, ...)")
                for i in answer.nominate:
                    if i >= len(request.clusters):
                        raise ValueError(
                            f"nominates cluster {i}, but the request has {len(request.clusters)}"
                        )
                answers.append(answer)
            return answers

        return self.guard("dispatch", run)


def to_wit(answer: Answer, bindings: Any = None) -> Any:
    """An answer as the WIT ``answer`` record of ``bindings`` (the SDK's own by default)."""
    if bindings is None:
        return wit.DispatchAnswer(list(answer.nominate), answer.retry_after)
    return bindings.Answer(list(answer.nominate), answer.retry_after)


def export(policy: Callable[[], DispatchPolicy]) -> type:
    """The class componentize-py exports for the ``dispatch-plugin`` world. The plugin's
    ``policy.py`` ends with ``Dispatch = wasq_policy.dispatch.export(MyPolicy)``."""
    runtime = DispatchRuntime(policy)

    class Dispatch:
        """``wasq:policy/dispatch``, implemented by the SDK over the policy."""

        def set_settings(self, settings: Any) -> None:
            runtime.set_settings(settings)

        def dispatch(self, requests: Any) -> list[Any]:
            return [to_wit(a, _bindings) for a in runtime.dispatch(requests)]

    Dispatch.runtime = runtime  # type: ignore[attr-defined]
    return Dispatch
