"""protect-namespace-py's decisions, in plain CPython (no component needed)."""

from policy import DEFAULT_NAMESPACES, ProtectNamespace

from wasq_policy import NO_VICTIMS, KueueAmong, Needs, testing
from wasq_policy.preemption import CandidateKind
from wasq_policy.testing import CatalogBuilder


def full_queue(setting=None):
    """One ClusterQueue with 10 units, full with a workload of 5 in `prod` (priority 0) and
    one of 5 in `dev` (priority 1); a preemptor of priority 100 needs 5."""
    builder = CatalogBuilder().flavor_resources(1).cluster_queue("cq").quota(0, 0, 10)
    if setting is not None:
        builder.setting("namespaces", setting)
    catalog = builder.build()
    prod = testing.workload(catalog, 1, priority=0, namespace="prod", owner=("Job", "batch/v1", "a"))
    dev = testing.workload(catalog, 2, priority=1, namespace="dev")
    request = testing.preemption_request(
        catalog,
        testing.workload(catalog, 9, priority=100, namespace="dev"),
        requests={0: 5},
        candidates=[testing.candidate(prod, usage={0: 5}), testing.candidate(dev, usage={0: 5})],
        usage={0: {0: 10}},
    )
    return catalog, request


def decide(catalog, request):
    policy = ProtectNamespace()
    policy.catalog_changed(catalog)
    return policy.select_victims(catalog, request)


def test_reads_the_setting_and_defaults_to_prod():
    assert DEFAULT_NAMESPACES == "prod"
    policy = ProtectNamespace()
    policy.catalog_changed(CatalogBuilder().build())
    assert policy.protected == {"prod"}
    policy.catalog_changed(CatalogBuilder().setting("namespaces", " prod, ,payments ").build())
    assert policy.protected == {"prod", "payments"}


def test_kueue_chooses_among_the_unprotected_candidates():
    catalog, request = full_queue()
    # Kueue would take candidate 0 (lowest priority): it is in `prod`.
    assert decide(catalog, request) == KueueAmong([1])


def test_all_protected_leaves_kueue_nothing_to_choose():
    catalog, request = full_queue("prod,dev")
    assert decide(catalog, request) == KueueAmong([])
    catalog, request = full_queue("staging")
    assert decide(catalog, request) == KueueAmong([0, 1])


def test_needs_are_kueues_plus_identity():
    policy = ProtectNamespace()
    classical = CatalogBuilder().build()
    assert policy.needs(classical) == Needs.IDENTITY
    fair = CatalogBuilder().fair_sharing().build()
    assert policy.needs(fair) == Needs.IDENTITY | Needs.TREE_USAGE


def test_a_candidate_without_identity_is_not_protected():
    # The host sends no identity only when needs lack it; the policy still answers safely.
    catalog = CatalogBuilder().flavor_resources(1).cluster_queue("cq").quota(0, 0, 10).build()
    nobody = testing.workload(catalog, 1)
    request = testing.preemption_request(
        catalog, testing.workload(catalog, 9, priority=5), {0: 5},
        [testing.candidate(nobody, usage={0: 5}, kind=CandidateKind.SAME_QUEUE)],
        usage={0: {0: 10}},
    )
    assert decide(catalog, request) == KueueAmong([0])
    assert decide(catalog, request) != NO_VICTIMS
