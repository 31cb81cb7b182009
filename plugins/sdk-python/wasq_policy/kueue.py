"""Kueue's default decisions, where they are simple to state, to reuse, filter or fall back to.

- Ordering: :func:`sort_key` ``(-priority, created, 0)``; :func:`order_heads`, the classical
  cycle order (second passes first, then lower borrowing level, higher priority, older;
  stable); :func:`ordering_needs`. Fair sharing's tournament and admission fair sharing's
  LocalQueue order are not in this SDK: a Python ordering decides its own order then.
- Preemption: :func:`select_victims` and :func:`kueue_among` — the host runs Kueue's own
  victim selection (classical, or fair sharing's when on), restricted to the candidates a
  policy keeps (``answer.kueue-among``); :func:`preemption_needs`.
- Flavor assignment: :func:`choose_flavor` (Kueue's scan with flavor fungibility),
  :func:`fungibility_of`, :func:`is_preferred`, :func:`should_try_next_flavor`.
- Placement: Kueue's BestFit is not expressible as an answer (``placement.wit`` has no
  "Kueue's default" case) and not ported; see :func:`wasq_policy.placement.simple_fit`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence

from . import wit
from .answers import KueueAmong, SortKey
from .wit import FitMode, FungibilityPolicy, FungibilityPreference, Needs

_S64 = 2**64


def _wrap_s64(value: int) -> int:
    """Two's-complement wrap into the s64 range (Rust's ``wrapping_neg`` of ``i64::MIN``)."""
    value %= _S64
    return value - _S64 if value >= 2**63 else value


# --------------------------------------------------------------------------------------------
# Ordering


def ordering_needs(catalog: Any) -> Needs:
    """What Kueue's ordering reads under the catalog's configuration: tree usage when fair
    sharing is on, LocalQueue usage when admission fair sharing is on; never who workloads
    are (a policy that reads identity adds ``Needs.IDENTITY``)."""
    needs = Needs.none()
    if catalog.fair_sharing is not None:
        needs |= Needs.TREE_USAGE
    if catalog.admission_fair_sharing is not None:
        needs |= Needs.LOCAL_QUEUE_USAGE
    return needs


def sort_key_with_priority(priority: int, created: int) -> SortKey:
    """Kueue's queue key for an effective priority and creation time:
    ``(-priority, created, 0)``."""
    return SortKey(_wrap_s64(-priority), created, 0)


def sort_key(workload: Any) -> SortKey:
    """Kueue's queue order: higher priority first, then older first: ``(-priority, created,
    0)``."""
    return sort_key_with_priority(workload.priority, workload.created)


def order_heads(heads: Sequence[Any], priority: Optional[Callable[[Any], int]] = None) -> list[int]:
    """Kueue's classical cycle order (without fair sharing): the positions of ``heads``
    sorted by (second pass first, lower borrowing level, higher priority, older), stable, so
    equal heads keep the host's order. ``priority`` gives each head's effective priority
    (default: ``head.priority``), for a policy whose queue order changes it."""
    prio = priority if priority is not None else (lambda h: h.priority)
    return sorted(
        range(len(heads)),
        key=lambda i: (
            not heads[i].second_pass,
            heads[i].borrowing_level,
            _wrap_s64(-prio(heads[i])),
            heads[i].created,
        ),
    )


# --------------------------------------------------------------------------------------------
# Preemption


def preemption_needs(catalog: Any) -> Needs:
    """What Kueue's victim selection reads under the catalog's configuration: tree usage
    when fair sharing is on (its shares); never who workloads are. A policy that narrows
    Kueue's choice by identity returns ``preemption_needs(catalog) | Needs.IDENTITY``, so
    that the host sends what Kueue's selection needs as well."""
    return Needs.TREE_USAGE if catalog.fair_sharing is not None else Needs.none()


def kueue_among(candidates: Iterable[Any]) -> KueueAmong:
    """Kueue's victims, chosen only among these candidates (or indices): the host runs
    Kueue's selection as if the others were not eligible (``answer.kueue-among``)."""
    return KueueAmong(candidates)


def select_victims(request: Any) -> KueueAmong:
    """Kueue's victims for a request, exactly as the built-in policy chooses them."""
    return KueueAmong(range(len(request.candidates)))


# --------------------------------------------------------------------------------------------
# Flavor assignment


def default_fungibility() -> wit.Fungibility:
    """Kueue's defaults for ``spec.flavorFungibility``."""
    return wit.Fungibility()


def default_preemption() -> wit.PreemptionConfig:
    """Kueue's defaults for ``spec.preemption``."""
    return wit.PreemptionConfig()


def fungibility_of(catalog: Any, cluster_queue: int) -> wit.Fungibility:
    """A ClusterQueue's flavor fungibility; Kueue's defaults when it is unknown."""
    cq = catalog.cluster_queue(cluster_queue)
    return cq.fungibility if cq is not None else default_fungibility()


_RANK = {
    FitMode.NO_FIT: 0,
    FitMode.NO_PREEMPTION_CANDIDATES: 1,
    FitMode.PREEMPT: 2,
    FitMode.RECLAIM: 3,
    FitMode.FIT: 4,
}


def is_preferred(a: tuple[FitMode, int], b: tuple[FitMode, int], f: wit.Fungibility) -> bool:
    """Kueue's ``isPreferred(a, b)``: whether (mode, borrowing level) ``a`` beats ``b``."""
    if a[0] == FitMode.NO_FIT:
        return False
    if b[0] == FitMode.NO_FIT:
        return True
    a_none = a[0] == FitMode.NO_PREEMPTION_CANDIDATES
    b_none = b[0] == FitMode.NO_PREEMPTION_CANDIDATES
    if a_none != b_none:
        return not a_none
    if f.preference == FungibilityPreference.BORROWING_OVER_PREEMPTION:
        if a[0] != b[0]:
            return _RANK[a[0]] > _RANK[b[0]]
        return a[1] < b[1]
    if a[1] != b[1]:
        return a[1] < b[1]
    return _RANK[a[0]] > _RANK[b[0]]


def should_try_next_flavor(mode: tuple[FitMode, int], f: wit.Fungibility) -> bool:
    """Kueue's ``shouldTryNextFlavor`` for a flavor's (mode, borrowing level)."""
    if mode[0] in (FitMode.NO_FIT, FitMode.NO_PREEMPTION_CANDIDATES):
        return True
    if mode[0] in (FitMode.PREEMPT, FitMode.RECLAIM) and (
        f.when_can_preempt == FungibilityPolicy.TRY_NEXT_FLAVOR
    ):
        return True
    return mode[1] > 0 and f.when_can_borrow == FungibilityPolicy.TRY_NEXT_FLAVOR


def choose_flavor(options: Sequence[Optional[Any]], fungibility: wit.Fungibility) -> Optional[int]:
    """Kueue's flavor choice: scan the options (``None`` where a flavor cannot host the
    podSet) in the ClusterQueue's order, stop at the first one the fungibility rules accept,
    otherwise take the most preferred one seen. The index of the option, or ``None``."""
    best: Optional[int] = None
    best_mode: tuple[FitMode, int] = (FitMode.NO_FIT, 2**32 - 1)
    for i, option in enumerate(options):
        if option is None:
            continue
        mode = (option.mode, option.borrow_level)
        if not should_try_next_flavor(mode, fungibility):
            return i
        if is_preferred(mode, best_mode, fungibility):
            best, best_mode = i, mode
    return best
