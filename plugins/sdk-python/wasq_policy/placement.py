"""Placement policies (topology-aware scheduling): subclass :class:`PlacementPolicy` and
export it.

::

    import wasq_policy
    from wasq_policy.placement import PlacementPolicy, simple_fit

    class Packed(PlacementPolicy):
        def place(self, catalog, request):
            return simple_fit(request)

    Placement = wasq_policy.placement.export(Packed)

The host builds the TAS flavor's domain tree, subtracts what admitted workloads use, works out
which leaves the pods may use and sends it all; the policy answers :class:`Placed` (pods per
leaf, and a podSet group's leader's leaf) or :class:`NoFit`. The host checks every answer:
every pod placed, on eligible leaves within their free capacity, each leaf once, inside one
domain of a required level, whole slices per slice domain and per further slice layer's
domain, the leader where it fits.

There is no "Kueue's default" answer in ``placement.wit``: a placement policy places every
podSet it is asked about. Kueue's BestFit runs only when an answer is refused or the plugin
traps, and counts as a failure. :func:`simple_fit` is a complete, valid placement to start
from (not Kueue's BestFit: its choices may differ).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from . import wit
from ._runtime import Runtime
from .answers import NoFit, Placed, PlacementAnswer
from .catalog import Catalog, to_sdk
from .wit import ConstraintMode
from .workload import Workload

try:  # Only inside a component build of the placement-plugin world.
    from wit_world.exports import placement as _bindings
except ImportError:
    _bindings = wit

__all__ = [
    "ConstraintMode",
    "NoFit",
    "Placed",
    "PlacementPolicy",
    "PlacementRuntime",
    "Request",
    "export",
    "simple_fit",
]

#: How many pods fit where no resource is requested at all (Rust's ``i32::MAX``).
UNBOUNDED = 2**31 - 1


def pods_fitting(per_pod: Sequence[int], free: Sequence[int]) -> int:
    """How many pods of ``per_pod`` (per resource column) fit in ``free``."""
    best = UNBOUNDED
    for need, have in zip(per_pod, free):
        if need > 0:
            best = min(best, max(0, have) // need)
    return best


class Request:
    """One TAS podSet to place (``placement.request``), with its domain tree's structure
    worked out: each domain's children, the domains of each level, each domain's leaf.

    Domains and leaves are named by their index in ``request.domains`` and
    ``request.leaves``. Domains are numbered depth first, the domains of one level in the
    order of their label values (so an index breaks ties as Kueue's values do)."""

    __slots__ = ("raw", "catalog", "workload", "constraint", "_children", "_per_level",
                 "_leaf_of")

    def __init__(self, raw: Any, catalog: Catalog) -> None:
        #: The request record as the host sent it.
        self.raw = raw
        #: The catalog its indices refer to.
        self.catalog = catalog
        #: The workload (identity and podSets always present).
        self.workload = Workload(raw.workload, catalog)
        #: What the podSet's topology request asks (``level``, ``mode``, ``slice_level``,
        #: ``slice_size``, ``layers``), levels as indices into ``level_names``.
        self.constraint: wit.Constraint = to_sdk(raw.constraint)
        n = len(raw.domains)
        self._children: list[list[int]] = [[] for _ in range(n)]
        self._per_level: list[list[int]] = [[] for _ in raw.level_names]
        for i, d in enumerate(raw.domains):
            if d.parent is not None and 0 <= d.parent < n:
                self._children[d.parent].append(i)
            if 0 <= d.level < len(self._per_level):
                self._per_level[d.level].append(i)
        self._leaf_of: dict[int, int] = {}
        for leaf, l in enumerate(raw.leaves):
            self._leaf_of[l.domain] = leaf

    # -- the request's fields ----------------------------------------------------------------

    @property
    def pod_set(self) -> int:
        """The podSet's index in ``workload.pod_sets``."""
        return self.raw.pod_set

    @property
    def flavor(self) -> int:
        """The TAS ResourceFlavor assigned to the podSet."""
        return self.raw.flavor

    @property
    def flavor_name(self) -> str:
        """The flavor's name."""
        return self.catalog.raw.flavors[self.raw.flavor].name

    @property
    def topology(self) -> str:
        """The flavor's Topology's name."""
        return self.catalog.string(self.raw.topology)

    @property
    def level_names(self) -> list[str]:
        """The Topology's level labels, highest first."""
        return [self.catalog.string(s) for s in self.raw.level_names]

    @property
    def resource_names(self) -> list[str]:
        """The capacity columns' resource names, ``pods`` first."""
        return [self.catalog.string(s) for s in self.raw.resource_names]

    @property
    def count(self) -> int:
        """Pods to place."""
        return self.raw.count

    @property
    def per_pod(self) -> list[int]:
        """One pod's request per resource column, milli-units (``pods`` is 1000)."""
        return self.raw.per_pod

    @property
    def leader(self) -> Optional[list[int]]:
        """A podSet group's leader's one-pod request per column; ``None`` without a group."""
        return self.raw.leader

    @property
    def domains(self) -> list[Any]:
        """The domain tree: ``level``, ``parent``, ``free`` per resource column."""
        return self.raw.domains

    @property
    def leaves(self) -> list[Any]:
        """The leaves: ``domain``, ``eligible``."""
        return self.raw.leaves

    @property
    def now(self) -> int:
        """The scheduler's clock at this decision."""
        return self.raw.now

    # -- the tree ----------------------------------------------------------------------------

    @property
    def lowest(self) -> int:
        """The lowest level (the leaves')."""
        return max(0, len(self.raw.level_names) - 1)

    def level(self, domain: int) -> int:
        """A domain's level (0 = the highest)."""
        return self.raw.domains[domain].level

    def parent(self, domain: int) -> Optional[int]:
        """A domain's parent; ``None`` at the highest level."""
        return self.raw.domains[domain].parent

    def children(self, domain: int) -> list[int]:
        """A domain's children, in the order of their values."""
        return self._children[domain]

    def at_level(self, level: int) -> list[int]:
        """The domains of a level, in the order of their values."""
        return self._per_level[level] if 0 <= level < len(self._per_level) else []

    def ancestor_at(self, domain: int, level: int) -> int:
        """The ancestor of ``domain`` at ``level`` (``domain`` itself at its own level)."""
        while self.level(domain) > level:
            parent = self.parent(domain)
            if parent is None:
                break
            domain = parent
        return domain

    def resource(self, name: str) -> Optional[int]:
        """The column of a resource by name (``pods``, ``cpu``, ``nvidia.com/gpu``)."""
        for i, s in enumerate(self.raw.resource_names):
            if self.catalog.string(s) == name:
                return i
        return None

    def free(self, resource: int, domain: int) -> int:
        """A domain's free capacity of a resource column (a leaf's own, an inner domain's
        the sum of its leaves')."""
        return self.raw.domains[domain].free[resource]

    def leaf_of(self, domain: int) -> Optional[int]:
        """The leaf a lowest-level domain is."""
        return self._leaf_of.get(domain)

    def leaf_domain(self, leaf: int) -> int:
        """A leaf's domain."""
        return self.raw.leaves[leaf].domain

    def eligible(self, leaf: int) -> bool:
        """Whether the pods may run on a leaf."""
        return self.raw.leaves[leaf].eligible

    def fits_on(self, leaf: int) -> int:
        """How many pods fit on a leaf's free capacity (ignoring eligibility)."""
        return pods_fitting(self.raw.per_pod, self.raw.domains[self.leaf_domain(leaf)].free)

    def fits_with_leader(self, leaf: int) -> Optional[int]:
        """With a leader: ``None`` when it does not fit on the leaf, else how many pods fit
        next to it. ``None`` without a leader."""
        leader = self.raw.leader
        if leader is None:
            return None
        free = self.raw.domains[self.leaf_domain(leaf)].free
        if pods_fitting(leader, free) < 1:
            return None
        return pods_fitting(self.raw.per_pod, [f - l for f, l in zip(free, leader)])

    def pods_fitting(self, domain: int) -> int:
        """The pods that fit on a domain's eligible leaves, each leaf on its own."""
        leaf = self.leaf_of(domain)
        if leaf is not None:
            return self.fits_on(leaf) if self.eligible(leaf) else 0
        return sum(self.pods_fitting(c) for c in self.children(domain))

    def __repr__(self) -> str:
        return (
            f"Request(workload={self.workload!r}, pod_set={self.pod_set}, count={self.count}, "
            f"domains={len(self.raw.domains)}, leaves={len(self.raw.leaves)})"
        )


# --------------------------------------------------------------------------------------------
# A simple, valid placement


def _units(request: Request) -> list[int]:
    """Per level, the multiple of pods every domain of it must hold: the slice size down to
    the slice level, then each further layer's size down to its level, then 1."""
    c = request.constraint
    levels = len(request.raw.level_names)
    units = [1] * levels
    for level in range(min(c.slice_level + 1, levels)):
        units[level] = max(1, c.slice_size)
    previous = c.slice_level
    for layer in c.layers:
        if layer.level <= previous:
            continue
        for level in range(previous + 1, min(layer.level + 1, levels)):
            units[level] = max(1, layer.size)
        previous = layer.level
    return units


class _Capacity:
    """Pods each domain can hold in whole units, bottom up; ``override`` changes a few."""

    def __init__(self, request: Request, units: list[int]) -> None:
        self.request = request
        self.units = units
        domains = request.raw.domains
        raw = [0] * len(domains)
        for leaf, l in enumerate(request.raw.leaves):
            if l.eligible and 0 <= l.domain < len(domains):
                raw[l.domain] = min(request.fits_on(leaf), UNBOUNDED)
        self.caps = [0] * len(domains)
        # Domains are numbered depth first: children come after their parent.
        for d in range(len(domains) - 1, -1, -1):
            self.caps[d] = self._round(d, raw[d])
            parent = domains[d].parent
            if parent is not None and 0 <= parent < d:
                raw[parent] += self.caps[d]
        self.override: dict[int, int] = {}

    def _round(self, domain: int, pods: int) -> int:
        level = self.request.raw.domains[domain].level
        unit = self.units[level] if 0 <= level < len(self.units) else 1
        return pods - pods % unit

    def __call__(self, domain: int) -> int:
        found = self.override.get(domain)
        return found if found is not None else self.caps[domain]

    def with_leader_on(self, leaf: int, pods_next_to_it: int) -> None:
        """Sets the override: the leaf holds only the pods that fit next to the leader."""
        self.override = {}
        domain: Optional[int] = self.request.leaf_domain(leaf)
        self.override[domain] = self._round(domain, pods_next_to_it)
        domain = self.request.parent(domain)
        while domain is not None:
            total = sum(self(c) for c in self.request.children(domain))
            self.override[domain] = self._round(domain, total)
            domain = self.request.parent(domain)


def _fill(request: Request, cap: _Capacity, domains: Sequence[int], pods: int,
          out: dict[int, int]) -> int:
    """Puts ``pods`` into ``domains``, fullest first, down to the leaves; returns what is
    left (0 when the domains' capacity allows)."""
    for d in sorted(domains, key=lambda d: (-cap(d), d)):
        if pods <= 0:
            break
        take = min(cap(d), pods)
        if take <= 0:
            continue
        leaf = request.leaf_of(d)
        if leaf is not None:
            out[leaf] = take
            pods -= take
        else:
            pods -= take - _fill(request, cap, request.children(d), take, out)
    return pods


def _scopes(request: Request, cap: _Capacity) -> list[list[int]]:
    """Where to try, in order: one domain each (tightest first) of the required level; of
    the preferred level, then the levels above, then the whole topology; for an
    unconstrained podSet, the whole topology."""
    c = request.constraint
    whole = request.at_level(0)
    if c.mode == ConstraintMode.UNCONSTRAINED:
        return [whole]
    levels = [c.level] if c.mode == ConstraintMode.REQUIRED else range(c.level, -1, -1)
    scopes = []
    for level in levels:
        scopes += [[d] for d in sorted(request.at_level(level), key=lambda d: (cap(d), d))]
    if c.mode == ConstraintMode.PREFERRED:
        scopes.append(whole)
    return scopes


def _leaves_under(request: Request, domains: Sequence[int]) -> list[int]:
    out: list[int] = []
    stack = list(reversed(domains))
    while stack:
        d = stack.pop()
        leaf = request.leaf_of(d)
        if leaf is not None:
            out.append(leaf)
        stack.extend(reversed(request.children(d)))
    return out


def simple_fit(request: Request) -> PlacementAnswer:
    """A valid placement of every pod, or why there is none.

    Tries one domain of the constraint's level (required: only those; preferred: then the
    levels above, then anywhere; unconstrained: anywhere), the tightest that holds every pod
    first, and fills it fullest domain first, level by level down to the leaves. Slices stay
    whole within their slice-level domains and further slice layers within theirs; a
    leader goes on the first eligible leaf of the chosen domain where it fits and leaves room
    for the pods. Not Kueue's BestFit: an answer may differ from the built-in's, never be
    refused for it."""
    count = request.count
    cap = _Capacity(request, _units(request))
    best = 0
    for scope in _scopes(request, cap):
        room = sum(cap(d) for d in scope)
        best = max(best, min(room, count))
        if request.leader is None:
            if room < count:
                continue
            pods: dict[int, int] = {}
            _fill(request, cap, scope, count, pods)
            return Placed(sorted(pods.items()))
        for leaf in _leaves_under(request, scope):
            next_to_it = request.fits_with_leader(leaf)
            if not request.eligible(leaf) or next_to_it is None:
                continue
            cap.with_leader_on(leaf, next_to_it)
            if sum(cap(d) for d in scope) >= count:
                pods = {}
                _fill(request, cap, scope, count, pods)
                cap.override = {}
                return Placed(sorted(pods.items()), leader=leaf)
            cap.override = {}
    if request.leader is not None and best >= count:
        return NoFit(f'topology "{request.topology}" has no leaf for the leader next to '
                     f"{count} pod(s)")
    return NoFit(f'topology "{request.topology}" allows to fit only {best} out of '
                 f"{count} pod(s)")


# --------------------------------------------------------------------------------------------
# The policy


class PlacementPolicy:
    """A placement policy: override :meth:`place`."""

    def catalog_changed(self, catalog: Catalog) -> None:
        """Called after the host sent a new catalog, before the next decision: the place to
        read settings (``catalog.setting("name")``)."""

    def place(self, catalog: Catalog, request: Request) -> PlacementAnswer:
        """Pods per leaf (:class:`Placed`), or why the podSet does not fit
        (:class:`NoFit`). :func:`simple_fit` is a valid placement to start from."""
        raise NotImplementedError(f"{type(self).__name__} does not define place()")


class PlacementRuntime(Runtime[PlacementPolicy]):
    """One placement instance: the policy, the catalog and the string table."""

    kind = "placement"

    def set_catalog(self, raw: Any) -> None:
        """``set-catalog``: stores the catalog and tells the policy."""
        catalog = self.install_catalog(raw)
        policy = self.policy
        self.guard("catalog_changed", lambda: policy.catalog_changed(catalog))

    def place(self, strings: Any, requests: Sequence[Any]) -> list[PlacementAnswer]:
        """``place``: one answer per request, in order."""
        self.add_strings(strings)
        catalog, policy = self.catalog, self.policy

        def run() -> list[PlacementAnswer]:
            answers = []
            for raw in requests:
                answer = policy.place(catalog, Request(raw, catalog))
                if not isinstance(answer, (Placed, NoFit)):
                    raise TypeError(f"place answered {answer!r}: answer Placed(...) or NoFit(...)")
                answers.append(answer)
            return answers

        return self.guard("place", run)


def to_wit(answer: PlacementAnswer, bindings: Any = wit) -> Any:
    """An answer as the WIT ``answer`` variant of ``bindings``."""
    if isinstance(answer, Placed):
        pods = [bindings.LeafPods(leaf, count) for leaf, count in answer.pods]
        return bindings.Answer_Placed(bindings.Placement(pods, answer.leader))
    return bindings.Answer_NoFit(answer.message)


def export(policy: Callable[[], PlacementPolicy]) -> type:
    """The class componentize-py exports for the ``placement-plugin`` world. The plugin's
    ``policy.py`` ends with ``Placement = wasq_policy.placement.export(MyPolicy)``."""
    runtime = PlacementRuntime(policy)

    class Placement:
        """``wasq:policy/placement``, implemented by the SDK over the policy."""

        def set_catalog(self, catalog: Any) -> None:
            runtime.set_catalog(catalog)

        def place(self, strings: Any, requests: Any) -> list[Any]:
            return [to_wit(a, _bindings) for a in runtime.place(strings, requests)]

    Placement.runtime = runtime  # type: ignore[attr-defined]
    return Placement
