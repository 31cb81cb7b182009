"""Flavor-assignment policies: subclass :class:`FlavorAssignmentPolicy` and export it.

::

    import wasq_policy
    from wasq_policy import kueue
    from wasq_policy.flavor_assignment import FlavorAssignmentPolicy

    class SpotOptIn(FlavorAssignmentPolicy):
        def choose_flavor(self, catalog, request):
            ok = request.workload.label("wasq.dev/spot") == "ok"
            options = [o if o is None or ok or not o.flavor_name.startswith("spot") else None
                       for o in request.options]
            return kueue.choose_flavor(options, request.fungibility)

    FlavorAssignment = wasq_policy.flavor_assignment.export(SpotOptIn)

The host evaluates every flavor of a resource group for a podSet (node labels and taints,
quota, borrowing, whether preemption could help) and calls only when there is a choice. The
policy answers an option (or its index) or ``None``. ``None`` assigns *no* flavor (the
workload is not admitted this cycle): it is not "Kueue's default" — for that, answer
:func:`kueue.choose_flavor` (:meth:`Request.kueue_choice`), which is what the default does.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

from . import kueue, wit
from ._runtime import Runtime
from .answers import _index
from .catalog import Catalog, sdk_enum
from .wit import FitMode
from .workload import Workload

__all__ = [
    "FitMode",
    "FlavorAssignmentPolicy",
    "FlavorAssignmentRuntime",
    "FlavorOption",
    "Request",
    "export",
]


class FlavorOption:
    """One flavor the host evaluated for the podSet (``flavor-assignment.flavor-option``).
    ``index`` is its position in ``request.options``: what the answer names."""

    __slots__ = ("index", "flavor", "mode", "borrow_level", "_catalog")

    def __init__(self, raw: Any, index: int, catalog: Catalog) -> None:
        #: Its position in ``request.options``.
        self.index = index
        #: The flavor (an index into ``catalog.flavors``).
        self.flavor: int = raw.flavor
        #: How the podSet fits the flavor, worst resource of the group.
        self.mode: FitMode = sdk_enum(FitMode, raw.mode)
        #: How high in the cohort tree it borrows (0 = within nominal quota).
        self.borrow_level: int = raw.borrow_level
        self._catalog = catalog

    @property
    def flavor_name(self) -> str:
        """The ResourceFlavor's name."""
        flavors = self._catalog.raw.flavors
        return flavors[self.flavor].name if 0 <= self.flavor < len(flavors) else ""

    def annotation(self, key: str) -> Optional[str]:
        """An exposed annotation of the ResourceFlavor (``wasq.dev/cost``, …)."""
        flavors = self._catalog.raw.flavors
        if not 0 <= self.flavor < len(flavors):
            return None
        return self._catalog.annotation(flavors[self.flavor].annotations, key)

    @property
    def fits(self) -> bool:
        """Whether the podSet fits now, without preemption."""
        return self.mode == FitMode.FIT

    def __repr__(self) -> str:
        return (
            f"FlavorOption(index={self.index}, flavor={self.flavor_name!r}, "
            f"mode={self.mode.name}, borrow_level={self.borrow_level})"
        )


class Request:
    """One podSet and one resource group to choose a flavor for
    (``flavor-assignment.request``)."""

    __slots__ = ("raw", "catalog", "workload", "options")

    def __init__(self, raw: Any, catalog: Catalog) -> None:
        #: The request record as the host sent it.
        self.raw = raw
        #: The catalog its indices refer to.
        self.catalog = catalog
        #: The workload (identity and podSets always present).
        self.workload = Workload(raw.workload, catalog)
        #: Every flavor of the group in the ClusterQueue's order; ``None`` where the flavor
        #: cannot host the podSet at all (taints, node affinity, or it does not exist).
        self.options: list[Optional[FlavorOption]] = [
            None if o is None else FlavorOption(o, i, catalog) for i, o in enumerate(raw.options)
        ]

    @property
    def pod_set(self) -> int:
        """The podSet's index in ``workload.pod_sets``."""
        return self.raw.pod_set

    @property
    def pod_set_spec(self) -> Optional[Any]:
        """The podSet itself (``count``, ``min_count``, ``per_pod``)."""
        pod_sets = self.workload.pod_sets
        return pod_sets[self.raw.pod_set] if 0 <= self.raw.pod_set < len(pod_sets) else None

    @property
    def requests(self) -> list[Any]:
        """The group's resources the podSet requests in total (``resource``, ``amount``)."""
        return self.raw.requests

    @property
    def now(self) -> int:
        """The scheduler's clock at this decision."""
        return self.raw.now

    @property
    def fungibility(self) -> wit.Fungibility:
        """The workload's ClusterQueue's ``spec.flavorFungibility``."""
        return kueue.fungibility_of(self.catalog, self.raw.workload.cluster_queue)

    def kueue_choice(self) -> Optional[int]:
        """Kueue's choice among the options (:func:`kueue.choose_flavor`)."""
        return kueue.choose_flavor(self.options, self.fungibility)

    def __repr__(self) -> str:
        return f"Request(workload={self.workload!r}, pod_set={self.pod_set}, options={self.options})"


class FlavorAssignmentPolicy:
    """A flavor-assignment policy. The default is Kueue's choice."""

    def catalog_changed(self, catalog: Catalog) -> None:
        """Called after the host sent a new catalog, before the next decision: the place to
        read settings (``catalog.setting("name")``)."""

    def choose_flavor(
        self, catalog: Catalog, request: Request
    ) -> Union[int, FlavorOption, None]:
        """The chosen option (or its index in ``request.options``), or ``None`` to assign no
        flavor (the workload is not admitted this cycle). The host checks that it is one of
        the offered flavors and fits. Default: Kueue's choice."""
        return request.kueue_choice()


class FlavorAssignmentRuntime(Runtime[FlavorAssignmentPolicy]):
    """One flavor-assignment instance: the policy, the catalog and the string table."""

    kind = "flavor-assignment"

    def set_catalog(self, raw: Any) -> None:
        """``set-catalog``: stores the catalog and tells the policy."""
        catalog = self.install_catalog(raw)
        policy = self.policy
        self.guard("catalog_changed", lambda: policy.catalog_changed(catalog))

    def choose_flavors(self, strings: Any, requests: Sequence[Any]) -> list[Optional[int]]:
        """``choose-flavors``: one answer per request, in order."""
        self.add_strings(strings)
        catalog, policy = self.catalog, self.policy

        def run() -> list[Optional[int]]:
            answers: list[Optional[int]] = []
            for raw in requests:
                choice = policy.choose_flavor(catalog, Request(raw, catalog))
                answers.append(None if choice is None else _index(choice))
            return answers

        return self.guard("choose_flavor", run)


def export(policy: Callable[[], FlavorAssignmentPolicy]) -> type:
    """The class componentize-py exports for the ``flavor-assignment-plugin`` world. The
    plugin's ``policy.py`` ends with
    ``FlavorAssignment = wasq_policy.flavor_assignment.export(MyPolicy)``."""
    runtime = FlavorAssignmentRuntime(policy)

    class FlavorAssignment:
        """``wasq:policy/flavor-assignment``, implemented by the SDK over the policy."""

        def set_catalog(self, catalog: Any) -> None:
            runtime.set_catalog(catalog)

        def choose_flavors(self, strings: Any, requests: Any) -> list[Optional[int]]:
            return runtime.choose_flavors(strings, requests)

    FlavorAssignment.runtime = runtime  # type: ignore[attr-defined]
    return FlavorAssignment
