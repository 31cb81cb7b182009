"""Who a workload is and what it asks: :class:`Identity`, read alike on a pending
:class:`Workload`, an ordering :class:`~wasq_policy.ordering.Head` and a preemption
:class:`~wasq_policy.preemption.Candidate`.

The host sends identities as ids into the instance's string table (``new-strings``); these
views resolve them to ``str`` through the catalog the SDK keeps. Without ``Needs.IDENTITY``
the host sends no identity, and a workload reads as nobody in particular: namespace ``""``,
no owner, no labels or annotations.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from . import wit
from .catalog import Catalog, sdk_enum


class JobOwner(NamedTuple):
    """The job that owns a workload (its controller ownerReference), strings resolved."""

    #: ``Job``, ``JobSet``, ``RayJob``, ``Notebook``, …
    kind: str
    #: ``batch/v1``, ``ray.io/v1``, …
    api_version: str
    #: The job's ``metadata.name`` (in the workload's namespace).
    name: str


class Identity:
    """Who a workload is. Subclasses hold the WIT ``workload-identity`` (or ``None``) in
    ``_who``, the catalog in ``_catalog`` and the LocalQueue id in ``local_queue``."""

    __slots__ = ()

    _who: Any
    _catalog: Catalog
    local_queue: Optional[int]

    @property
    def has_identity(self) -> bool:
        """Whether the host sent who the workload is (the policy's needs include
        ``Needs.IDENTITY``)."""
        return self._who is not None

    @property
    def namespace(self) -> str:
        """The Workload's namespace (``""`` without identity)."""
        who = self._who
        return "" if who is None else self._catalog.string(who.namespace)

    @property
    def owner(self) -> Optional[JobOwner]:
        """The job that owns the workload; ``None`` for a Workload without a controller
        ownerReference (created by hand) or without identity."""
        who = self._who
        if who is None or who.owner is None:
            return None
        s = self._catalog.string
        return JobOwner(s(who.owner.kind), s(who.owner.api_version), s(who.owner.name))

    @property
    def job_kind(self) -> Optional[str]:
        """The owning job's kind (``Job``, ``RayJob``, ``Notebook``, …); ``None`` for a bare
        Workload."""
        who = self._who
        if who is None or who.owner is None:
            return None
        return self._catalog.string(who.owner.kind)

    @property
    def job_api_version(self) -> Optional[str]:
        """The owning job's apiVersion (``batch/v1``, …)."""
        owner = self.owner
        return None if owner is None else owner.api_version

    @property
    def job_name(self) -> Optional[str]:
        """The owning job's name (in the workload's namespace)."""
        owner = self.owner
        return None if owner is None else owner.name

    @property
    def labels(self) -> dict[str, str]:
        """The labels the plugin's allow-list passes, by key (every key under
        ``kueue.x-k8s.io/`` and ``wasq.dev/``, plus ``pluginMetadata.<name>.labels``)."""
        return self._entries("labels")

    @property
    def annotations(self) -> dict[str, str]:
        """The annotations the plugin's allow-list passes, by key."""
        return self._entries("annotations")

    def label(self, key: str, default: Optional[str] = None) -> Optional[str]:
        """The value of the label ``key``, or ``default`` when the workload does not have it
        (or the allow-list does not pass it)."""
        return self._entry("labels", key, default)

    def annotation(self, key: str, default: Optional[str] = None) -> Optional[str]:
        """The value of the annotation ``key``, or ``default``."""
        return self._entry("annotations", key, default)

    @property
    def local_queue_name(self) -> Optional[str]:
        """The name of its LocalQueue (in its namespace), when it has one the host knows."""
        lq = None if self.local_queue is None else self._catalog.local_queue(self.local_queue)
        return None if lq is None else lq.name

    def _entries(self, which: str) -> dict[str, str]:
        who = self._who
        if who is None:
            return {}
        s = self._catalog.string
        return {s(e.key): s(e.value) for e in getattr(who, which)}

    def _entry(self, which: str, key: str, default: Optional[str]) -> Optional[str]:
        who = self._who
        if who is not None:
            s = self._catalog.string
            for e in getattr(who, which):
                if s(e.key) == key:
                    return s(e.value)
        return default


class Workload(Identity):
    """A pending workload (``types.workload``): a preemptor, a workload to key, the workload
    of a flavor-assignment or placement request."""

    __slots__ = ("raw", "_who", "_catalog", "local_queue", "local_queue_usage")

    def __init__(
        self,
        raw: Any,
        catalog: Catalog,
        local_queue_usage: Optional[wit.LocalQueueUsage] = None,
    ) -> None:
        #: The WIT record as the host sent it.
        self.raw = raw
        self._who = raw.identity
        self._catalog = catalog
        #: Its LocalQueue (an index into ``catalog.local_queues``); ``None`` when the host
        #: knows none.
        self.local_queue: Optional[int] = raw.local_queue
        #: In ``sort_key``: admission fair sharing's figures for its LocalQueue, when the
        #: policy needs ``Needs.LOCAL_QUEUE_USAGE`` and the host sent them; else ``None``.
        self.local_queue_usage = local_queue_usage

    @property
    def id(self) -> int:
        """Its handle: stable for the workload's lifetime (not an index into anything)."""
        return self.raw.id

    @property
    def cluster_queue(self) -> int:
        """The ClusterQueue it is queued in (or, for a preemptor, is being admitted to)."""
        return self.raw.cluster_queue

    @property
    def priority(self) -> int:
        """Effective priority: the priority class value plus Kueue's priority boost."""
        return self.raw.priority

    @property
    def created(self) -> int:
        """Creation time (Kueue's queue-order timestamp), milliseconds."""
        return self.raw.created

    @property
    def queued(self) -> int:
        """When it last entered its queue, milliseconds."""
        return self.raw.queued

    @property
    def requeue_count(self) -> int:
        """How often it was evicted and queued again (0 = never)."""
        return self.raw.requeue_count

    @property
    def requeue_reason(self) -> Optional[wit.RequeueReason]:
        """Why it was last evicted and queued again; ``None`` when it never was."""
        return sdk_enum(wit.RequeueReason, self.raw.requeue_reason)

    def requeued_at_least(self, times: int) -> bool:
        """Whether it was evicted and queued again at least ``times`` times."""
        return self.raw.requeue_count >= times

    @property
    def pod_sets(self) -> list[Any]:
        """Its podSets (``count``, ``min_count``, ``per_pod``: resource amounts), in order:
        empty when the host sent none (an ordering or preemption policy whose needs lack
        ``Needs.POD_SETS``)."""
        return self.raw.pod_sets or []

    def total_request(self, resource: int) -> int:
        """What all its pods request of a resource, in milli-units (``count`` × per pod,
        summed over podSets; 0 without podSets)."""
        total = 0
        for ps in self.pod_sets:
            for amount in ps.per_pod:
                if amount.resource == resource:
                    total += ps.count * amount.amount
        return total

    def __repr__(self) -> str:
        return (
            f"Workload(id={self.id}, cluster_queue={self.cluster_queue}, "
            f"priority={self.priority}, created={self.created}, namespace={self.namespace!r}, "
            f"job_kind={self.job_kind!r})"
        )
