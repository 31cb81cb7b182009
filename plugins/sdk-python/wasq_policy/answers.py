"""What policies answer: sort keys (ordering), victims (preemption), placements (placement).

Flavor assignment answers an option's index (or the option itself), or ``None``; ordering's
head order is a list of positions (or the heads themselves).
"""

from __future__ import annotations

from typing import Any, Iterable, NamedTuple, Optional, Union


class SortKey(NamedTuple):
    """A queue-order key (``ordering.sort-key``): workloads are popped smallest first,
    comparing ``primary``, then ``secondary``, then ``tertiary`` (it is a tuple, and compares
    as one); equal keys keep the host's order. Each part is a 64-bit signed integer. Kueue's
    key is ``(-priority, created, 0)`` (:func:`wasq_policy.kueue.sort_key`)."""

    primary: int
    secondary: int = 0
    tertiary: int = 0


def _index(item: Any) -> int:
    """A candidate, option or head as the index the answer names (ints pass as they are);
    raises for what no answer can name (a negative index, say)."""
    index = item if isinstance(item, int) and not isinstance(item, bool) else None
    if index is None:
        index = getattr(item, "index", None)
        if not isinstance(index, int):
            raise TypeError(f"{item!r} is neither an index nor a candidate, head or option")
    if not 0 <= index < 2**32:
        raise ValueError(f"index {index} is not a u32")
    return index


# --------------------------------------------------------------------------------------------
# Preemption


class NoVictims:
    """Preemption cannot make the preemptor fit: it waits, and nothing is preempted for it.
    Use the singleton :data:`NO_VICTIMS`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_VICTIMS"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NoVictims)

    def __hash__(self) -> int:
        return hash(NoVictims)


#: The answer "no victims".
NO_VICTIMS = NoVictims()


class Victims:
    """These victims: candidates (or their indices into ``request.candidates``), each at most
    once, that make the preemptor fit. ``allow_borrowing``: whether the preemptor may borrow
    once they are gone; it must be ``False`` when a victim is a
    ``RECLAIM_WITHOUT_BORROWING`` candidate of another ClusterQueue. The host checks both, and
    that no victim is more than needed."""

    __slots__ = ("victims", "allow_borrowing")

    def __init__(self, victims: Iterable[Any], *, allow_borrowing: bool) -> None:
        #: Indices into ``request.candidates``, in the order given.
        self.victims: tuple[int, ...] = tuple(_index(v) for v in victims)
        self.allow_borrowing = bool(allow_borrowing)

    def __repr__(self) -> str:
        return f"Victims({list(self.victims)}, allow_borrowing={self.allow_borrowing})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Victims)
            and self.victims == other.victims
            and self.allow_borrowing == other.allow_borrowing
        )

    def __hash__(self) -> int:
        return hash((self.victims, self.allow_borrowing))


class KueueAmong:
    """Kueue's own victims, chosen only among these candidates (or their indices): the host
    runs Kueue's selection — classical, or fair sharing's when it is on — as if the other
    candidates were not eligible, and answers "no victims" when these cannot make the
    preemptor fit. How a policy narrows Kueue's choice without writing it again. Duplicates
    are dropped; the order does not matter (the indices are kept sorted)."""

    __slots__ = ("candidates",)

    def __init__(self, candidates: Iterable[Any]) -> None:
        #: Indices into ``request.candidates``, sorted, each once.
        self.candidates: tuple[int, ...] = tuple(sorted({_index(c) for c in candidates}))

    def __repr__(self) -> str:
        return f"KueueAmong({list(self.candidates)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KueueAmong) and self.candidates == other.candidates

    def __hash__(self) -> int:
        return hash(self.candidates)


PreemptionAnswer = Union[NoVictims, Victims, KueueAmong]


# --------------------------------------------------------------------------------------------
# Placement


class Placed:
    """Where a podSet's pods go: pods per leaf (indices into ``request.leaves``), summing to
    ``request.count``, each leaf at most once; and the leader's leaf, exactly when the request
    has a leader. ``pods`` is a mapping ``{leaf: count}`` or pairs ``(leaf, count)``; leaves
    with 0 pods are left out."""

    __slots__ = ("pods", "leader")

    def __init__(
        self, pods: Union[dict[int, int], Iterable[tuple[int, int]]], leader: Optional[int] = None
    ) -> None:
        pairs = pods.items() if isinstance(pods, dict) else pods
        #: ``(leaf, count)`` pairs, in the order given, without zero counts.
        self.pods: tuple[tuple[int, int], ...] = tuple(
            (int(leaf), int(count)) for leaf, count in pairs if count
        )
        self.leader = leader

    @property
    def total(self) -> int:
        """How many pods are placed."""
        return sum(count for _, count in self.pods)

    def __repr__(self) -> str:
        return f"Placed({dict(self.pods)}, leader={self.leader})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Placed)
            and sorted(self.pods) == sorted(other.pods)
            and self.leader == other.leader
        )

    def __hash__(self) -> int:
        return hash((tuple(sorted(self.pods)), self.leader))


class NoFit:
    """The podSet does not fit: ``message`` becomes the workload's pending message (as
    ``couldn't assign flavors to pod set NAME: MESSAGE``)."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = str(message)

    def __repr__(self) -> str:
        return f"NoFit({self.message!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NoFit) and self.message == other.message

    def __hash__(self) -> int:
        return hash(self.message)


PlacementAnswer = Union[Placed, NoFit]
