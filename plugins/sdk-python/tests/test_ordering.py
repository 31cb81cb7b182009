"""The ordering runtime, driven with what the host sends: the table of heads between cycles,
groups and usage joined per head, positions answered as workloads, sort keys."""

import pytest

from wasq_policy import Needs, SortKey, kueue, testing, wit
from wasq_policy.ordering import Heads, OrderingPolicy, OrderingRuntime, export
from wasq_policy.testing import CatalogBuilder, capture_logs


def info(workload, priority=0, created=0, ns=None):
    return wit.HeadInfo(workload=workload, cluster_queue=0, priority=priority, created=created,
                        identity=None if ns is None else wit.WorkloadIdentity(ns))


def group(second_pass, level, *heads):
    return wit.HeadGroup(second_pass, level, list(heads))


class Classical(OrderingPolicy):
    def __init__(self):
        self.seen = []

    def needs(self, catalog):
        return kueue.ordering_needs(catalog)

    def order_heads(self, catalog, heads, now):
        self.seen.append(heads)
        return kueue.order_heads(heads)


def runtime(policy=Classical):
    rt = OrderingRuntime(policy)
    rt.set_catalog(CatalogBuilder().flavor_resources(2).cluster_queue("cq").build().raw)
    return rt


def test_the_table_is_kept_between_cycles_and_answers_are_workloads():
    rt = runtime()
    # Cycle 1: three new heads; head 2 borrows, head 1 is on its second pass.
    order = rt.order_heads(None, wit.NewHeads(0, [info(10, 1), info(11, 1), info(12, 5)]),
                           [0, 1, 2], [group(False, 0, 0), group(True, 0, 1), group(False, 1, 2)],
                           None, None, 0)
    assert order == [11, 10, 12]
    # Cycle 2: heads 0 and 2 by id, one new (id 3) of higher priority; none borrows.
    order = rt.order_heads(None, wit.NewHeads(3, [info(13, 9)]), [2, 0, 3],
                           [group(False, 0, 2, 0, 3)], None, None, 0)
    assert order == [13, 12, 10]
    # Nothing new: equal heads keep the host's order.
    assert rt.order_heads(None, None, [1, 0], [group(False, 0, 1, 0)], None, None, 0) == [11, 10]
    # A new catalog starts the table again.
    rt.set_catalog(CatalogBuilder().build().raw)
    assert len(rt.heads) == 0
    assert rt.order_heads(None, wit.NewHeads(0, [info(20)]), [0], [group(False, 0, 0)],
                          None, None, 0) == [20]


def test_heads_are_joined_with_groups_usage_and_identity():
    rt = runtime()
    rt.order_heads(wit.NewStrings(0, ["prod"]), wit.NewHeads(0, [info(4, ns=0), info(5)]),
                   [1, 0, 9], [group(True, 2, 0)],
                   [wit.HeadUsage(0, testing.amounts({0: 1000, 1: 2000}))],
                   [testing.node_usage(0, {1: 7})], 0)
    heads = rt.policy.seen[-1]
    b, a, missing = heads
    assert (a.index, a.workload, a.second_pass, a.borrowing_level, a.namespace) == (1, 4, True, 2, "prod")
    assert [(u.fr, u.amount) for u in a.usage] == [(0, 1000), (1, 2000)]
    assert (b.second_pass, b.borrowing_level, b.usage, b.namespace, b.has_identity) == (
        False, 0, [], "", False)
    assert (missing.workload, missing.cluster_queue) == (0, 0), "an id never sent: the empty head"
    assert heads.tree_usage.usage(0, 1) == 7 and heads.tree_usage.usage(0, 0) == 0


def test_no_tree_usage_unless_sent():
    rt = runtime()
    rt.order_heads(None, wit.NewHeads(0, [info(1)]), [0], [group(False, 0, 0)], None, None, 0)
    assert rt.policy.seen[-1].tree_usage is None


class Answer(OrderingPolicy):
    answer = []

    def order_heads(self, catalog, heads, now):
        return self.answer(heads)


def test_positions_past_the_heads_are_no_workload_and_heads_may_be_answered_themselves():
    rt = runtime(Answer)
    rt.policy.answer = lambda heads: [len(heads), 0]
    assert rt.order_heads(None, wit.NewHeads(0, [info(30)]), [0], [], None, None, 0) == [2**32 - 1, 30]
    rt.policy.answer = lambda heads: sorted(heads, key=lambda h: h.created, reverse=True)
    got = rt.order_heads(None, wit.NewHeads(0, [info(1, created=5), info(2, created=9)]),
                         [0, 1], [], None, None, 0)
    assert got == [2, 1]


class Keys(OrderingPolicy):
    def sort_key(self, catalog, workload, now):
        usage = workload.local_queue_usage
        return (workload.namespace == "prod", usage.weighted if usage else -1, now) if workload.id != 7 else workload.id


def test_sort_keys_read_identity_and_local_queue_usage_and_pad_short_keys():
    rt = runtime(Keys)
    wls = [wit.Workload(id=1, cluster_queue=0, local_queue=3, identity=wit.WorkloadIdentity(0)),
           wit.Workload(id=2, cluster_queue=0),
           wit.Workload(id=7, cluster_queue=0)]
    keys = rt.sort_keys(wit.NewStrings(0, ["prod"]), wls,
                        [testing.local_queue_usage(3, 2.0), testing.local_queue_usage(3, 9.0)], 42)
    assert keys == [SortKey(1, 2, 42), SortKey(0, -1, 42), SortKey(7, 0, 0)]
    bindings = export(Keys)()
    bindings.set_catalog(CatalogBuilder().build().raw)
    assert bindings.sort_keys(None, wls[1:2], [], 5) == [wit.SortKey(0, -1, 5)]


def test_keys_out_of_the_s64_range_raise_after_logging():
    class Huge(OrderingPolicy):
        def sort_key(self, catalog, workload, now):
            return (2**63,)

    rt = runtime(Huge)
    with capture_logs() as lines, pytest.raises(ValueError):
        rt.sort_keys(None, [wit.Workload(id=1, cluster_queue=0)], [], 0)
    assert "Huge.sort_key raised ValueError" in lines[0][1]


def test_the_default_policy_orders_as_kueue():
    cat = CatalogBuilder().build()
    policy = OrderingPolicy()
    old = testing.workload(cat, 1, priority=1, created=100)
    new = testing.workload(cat, 2, priority=1, created=200)
    high = testing.workload(cat, 3, priority=5, created=300)
    assert sorted([old, new, high], key=lambda w: policy.sort_key(cat, w, 0)) == [high, old, new]
    assert policy.needs(cat) == Needs.IDENTITY | Needs.POD_SETS
    heads = testing.heads(cat, [testing.head(old), testing.head(high, borrowing_level=1),
                                testing.head(new, second_pass=True)])
    assert isinstance(heads, Heads)
    assert policy.order_heads(cat, heads, 0) == [2, 0, 1]
