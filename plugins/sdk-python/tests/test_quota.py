"""Kueue's quota arithmetic in QuotaView, and catalogs built as the host derives them."""

from wasq_policy import QuotaView, testing
from wasq_policy.testing import CatalogBuilder, amounts

FR = 0


def two_queues():
    """cohort(0) <- a(1) nominal 10; b(2) nominal 6, borrowing limit 3, lending limit 2."""
    return (CatalogBuilder().flavor_resources(1).cohort("cohort")
            .cluster_queue("a", 0).quota(1, FR, 10)
            .cluster_queue("b", 0).quota(2, FR, 6, 3, 2).build())


def test_the_builder_derives_subtree_and_guaranteed_quotas():
    cat = two_queues()
    assert (cat.quota(2, FR).subtree, cat.quota(2, FR).guaranteed) == (6, 4)
    assert (cat.quota(1, FR).subtree, cat.quota(1, FR).guaranteed) == (10, 0)
    assert cat.quota(0, FR).subtree == 12, "a lends all 10, b lends 6 - 4"
    assert cat.quota(0, 7).subtree == 0 and cat.quota(9, FR).nominal == 0


def test_available_borrowing_and_fits_follow_kueue():
    cat = two_queues()
    view = QuotaView(cat)
    view.add_usage(1, FR, 11)
    assert (view.usage(1, FR), view.usage(0, FR)) == (11, 11), "a has no guaranteed quota"
    assert view.available(1, FR) == 1
    # b: 4 guaranteed + min(cohort's 1, (6 - 4) - 0 + 3).
    assert view.available(2, FR) == 5
    assert view.local_available(2, FR) == 4
    assert not view.borrowing(2, FR, 6) and view.borrowing(2, FR, 7)
    assert view.fits(2, amounts({FR: 5})) and not view.fits(2, amounts({FR: 6}))
    # Within guaranteed quota nothing bubbles up; above it, only the part above.
    view.add_usage(2, FR, 5)
    assert (view.usage(2, FR), view.usage(0, FR)) == (5, 12)
    assert view.available(1, FR) == 0
    assert view.within_nominal(2, [FR]) and not view.within_nominal(1, [FR])


def test_removing_and_restoring_in_any_order_restores_usage():
    cat = two_queues()
    view = QuotaView.from_usage(cat, [testing.node_usage(1, {FR: 11}), testing.node_usage(0, {FR: 11})])
    before = {n: view.usage(n, FR) for n in range(3)}
    view.add_usage(2, FR, 7)
    view.remove_workload(1, amounts({FR: 6}))
    view.add_usage(2, FR, -7)
    view.add_workload(1, amounts({FR: 6}))
    assert {n: view.usage(n, FR) for n in range(3)} == before


def test_from_usage_takes_a_nodes_later_entry_whole():
    cat = two_queues()
    view = QuotaView.from_usage(cat, [testing.node_usage(1, {0: 3, 1: 4}), testing.node_usage(1, {0: 7})])
    assert (view.usage(1, 0), view.usage(1, 1)) == (7, 0)


def test_a_view_restricted_to_some_flavor_resources_ignores_the_others():
    cat = two_queues()
    view = QuotaView(cat, {(1, 0): 3, (1, 1): 9}, frs=[0])
    view.add_usage(1, 1, 5)
    assert (view.usage(1, 0), view.usage(1, 1)) == (3, 0)
    copy = view.copy()
    copy.add_usage(1, 0, 1)
    assert (view.usage(1, 0), copy.usage(1, 0)) == (3, 4)


def test_potential_available_and_tree_lookups():
    # root(0) nominal 5 <- mid(1, borrowing limit 1) <- cq(2) nominal 2, lending limit 1
    cat = (CatalogBuilder().flavor_resources(1).cohort("root").quota(0, FR, 5)
           .cohort("mid", 0).quota(1, FR, 0, 1)
           .cluster_queue("cq", 1).quota(2, FR, 2, None, 1).build())
    assert [cat.potential_available(n, FR) for n in range(3)] == [6, 2, 3]
    assert [cat.node(n).height for n in range(3)] == [2, 1, 0]
    assert list(cat.ancestors(2)) == [1, 0] and cat.root(2) == 0 and cat.root(0) == 0
    assert list(cat.children(0)) == [1] and list(cat.children(2)) == []
    assert (cat.cluster_queue_of_node(2), cat.cluster_queue_of_node(1)) == (0, None)
    assert cat.is_cohort(1) and not cat.is_cohort(2) and cat.cluster_queue_node(0) == 2


def test_usage_table_is_what_the_host_sends_for_a_tree():
    cat = two_queues()
    table = testing.usage_table(cat, [0], [(1, FR, 11), (2, FR, 5)])
    assert [(u.node, [(a.fr, a.amount) for a in u.usage]) for u in table] == [
        (0, [(FR, 12)]), (1, [(FR, 11)]), (2, [(FR, 5)])]
