"""Kueue's default decisions: sort key, head order, needs, flavor choice."""

from wasq_policy import FitMode, KueueAmong, Needs, SortKey, kueue, testing, wit
from wasq_policy.testing import CatalogBuilder
from wasq_policy.wit import FungibilityPolicy, FungibilityPreference


def test_sort_key_is_minus_priority_then_created():
    cat = CatalogBuilder().build()
    assert kueue.sort_key(testing.workload(cat, 1, priority=7, created=99)) == SortKey(-7, 99, 0)
    # Rust's wrapping_neg: -i64::MIN is i64::MIN.
    assert kueue.sort_key_with_priority(-(2**63), 0) == SortKey(-(2**63), 0, 0)


def test_order_heads_second_pass_then_borrowing_then_priority_then_age_stable():
    cat = CatalogBuilder().build()
    w = lambda id, prio, created: testing.workload(cat, id, priority=prio, created=created)  # noqa: E731
    heads = testing.heads(cat, [
        testing.head(w(1, 5, 10), borrowing_level=1),
        testing.head(w(2, 1, 10)),
        testing.head(w(3, 1, 5)),
        testing.head(w(4, 0, 0), second_pass=True),
        testing.head(w(5, 1, 5)),
    ])
    assert kueue.order_heads(heads) == [3, 2, 4, 1, 0]
    # A policy's own priority (read back from the key, say).
    assert kueue.order_heads(heads, priority=lambda h: -h.workload) == [3, 1, 2, 4, 0]


def test_needs_follow_the_configuration_and_never_include_identity():
    plain = CatalogBuilder().build()
    fair = CatalogBuilder().fair_sharing().build()
    afs = CatalogBuilder().admission_fair_sharing().build()
    assert kueue.ordering_needs(plain) == Needs.none() == kueue.preemption_needs(plain)
    assert kueue.ordering_needs(fair) == Needs.TREE_USAGE == kueue.preemption_needs(fair)
    assert kueue.ordering_needs(afs) == Needs.LOCAL_QUEUE_USAGE
    assert kueue.preemption_needs(afs) == Needs.none()


def test_kueue_among_every_candidate_is_kueues_choice():
    cat = CatalogBuilder().flavor_resources(1).cluster_queue("cq").build()
    req = testing.preemption_request(cat, testing.workload(cat, 9), {0: 1},
                                     [testing.candidate(testing.workload(cat, i)) for i in range(4)])
    assert kueue.select_victims(req) == KueueAmong([0, 1, 2, 3])
    assert kueue.kueue_among(req.candidates[2:]) == KueueAmong([2, 3])


def fungibility(borrow=FungibilityPolicy.MAY_STOP_SEARCH, preempt=FungibilityPolicy.TRY_NEXT_FLAVOR,
                preference=FungibilityPreference.BORROWING_OVER_PREEMPTION):
    return wit.Fungibility(borrow, preempt, preference)


def test_choose_flavor_scans_with_fungibility():
    o = testing.option
    options = [None, o(0, FitMode.PREEMPT), o(1, FitMode.FIT, 1), o(2, FitMode.FIT, 0)]
    # Kueue's defaults: stop at a flavor that fits by borrowing.
    assert kueue.choose_flavor(options, fungibility()) == 2
    # whenCanBorrow: TryNextFlavor: go on to the one that fits without borrowing.
    assert kueue.choose_flavor(options, fungibility(FungibilityPolicy.TRY_NEXT_FLAVOR)) == 3
    # Nothing stops the scan: the most preferred one seen.
    try_next = FungibilityPolicy.TRY_NEXT_FLAVOR
    both = [o(0, FitMode.FIT, 1), o(1, FitMode.PREEMPT, 0)]
    assert kueue.choose_flavor(both, fungibility(try_next, try_next)) == 0
    assert kueue.choose_flavor(both, fungibility(
        try_next, try_next, FungibilityPreference.PREEMPTION_OVER_BORROWING)) == 1
    assert kueue.choose_flavor([None, o(0, FitMode.NO_FIT)], fungibility()) is None
    # Options with no preemption candidates lose to any that can preempt.
    assert kueue.choose_flavor([o(0, FitMode.NO_PREEMPTION_CANDIDATES), o(1, FitMode.PREEMPT)],
                               fungibility()) == 1
