"""The Python SDK for wasq scheduling-policy plugins: WebAssembly components, built with
componentize-py, that decide admission ordering, preemption victims, flavor assignment,
topology placement or MultiKueue dispatch for a Kueue-compatible scheduler (``wit/``:
``wasq:policy@1.1.0``).

A plugin subclasses one policy class and exports it, once, at the end of its ``policy.py``:

- ordering: ``ordering.OrderingPolicy``;
  ``Ordering = wasq_policy.ordering.export(MyPolicy)``
- preemption: ``preemption.PreemptionPolicy``;
  ``Preemption = wasq_policy.preemption.export(MyPolicy)``
- flavor assignment: ``flavor_assignment.FlavorAssignmentPolicy``;
  ``FlavorAssignment = wasq_policy.flavor_assignment.export(MyPolicy)``
- placement (TAS): ``placement.PlacementPolicy``;
  ``Placement = wasq_policy.placement.export(MyPolicy)``
- dispatch (MultiKueue): ``dispatch.DispatchPolicy``;
  ``Dispatch = wasq_policy.dispatch.export(MyPolicy)``

The SDK keeps the catalog the host sends and passes it to every method, implements the
contract's in-instance protocols (the string table, ordering's table of heads, preemption's
table of admitted workloads and kept quota usage) so that a policy never sees them, and hands
out typed views: :class:`Workload`, ``ordering.Head``, ``preemption.Candidate`` (who a workload
is, strings resolved), :class:`QuotaView` (Kueue's quota arithmetic), ``kueue`` (Kueue's
default decisions; Kueue's dispatchers are in ``dispatch``), :mod:`~wasq_policy.log` (the
host's log) and :mod:`~wasq_policy.testing` (builders to test a policy with pytest, no
component needed). A dispatch request carries names as strings: no catalog, no string table.

The package is pure Python 3.11+ with no dependency. It imports componentize-py's generated
bindings (``wit_world``) only when they exist, in a component build; in plain CPython the
SDK's own records (:mod:`wasq_policy.wit`) stand in. A policy must not use clocks, random
numbers, files, the environment, ``print`` or :mod:`logging`: the plugin has none of them
(``--stub-wasi``), and any of them traps it.
"""

from . import dispatch, flavor_assignment, kueue, log, ordering, placement, preemption, wit
from .answers import NO_VICTIMS, KueueAmong, NoFit, NoVictims, Placed, SortKey, Victims
from .catalog import Catalog
from .quota import QuotaView
from .wit import (
    CandidateKind,
    ConstraintMode,
    FitMode,
    Level,
    Needs,
    NodeKind,
    RequeueReason,
)
from .workload import Identity, JobOwner, Workload

__version__ = "0.1.0"

#: The WIT package this SDK implements.
WIT_PACKAGE = "wasq:policy@1.1.0"

__all__ = [
    "CandidateKind",
    "Catalog",
    "ConstraintMode",
    "FitMode",
    "Identity",
    "JobOwner",
    "KueueAmong",
    "Level",
    "NO_VICTIMS",
    "Needs",
    "NoFit",
    "NoVictims",
    "NodeKind",
    "Placed",
    "QuotaView",
    "RequeueReason",
    "SortKey",
    "Victims",
    "WIT_PACKAGE",
    "Workload",
    "dispatch",
    "flavor_assignment",
    "kueue",
    "log",
    "ordering",
    "placement",
    "preemption",
    "wit",
]
