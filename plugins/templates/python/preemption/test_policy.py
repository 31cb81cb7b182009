"""Tests of {{name}} in plain CPython: `python3 -m pytest`."""

from policy import Policy

from wasq_policy import KueueAmong, Needs, testing
from wasq_policy.testing import CatalogBuilder


def test_kueue_chooses_among_unprotected_candidates():
    # One ClusterQueue with 10 units, full with a workload of 5 in `prod` and one in `dev`.
    catalog = CatalogBuilder().flavor_resources(1).cluster_queue("cq").quota(0, 0, 10).build()
    prod = testing.workload(catalog, 1, priority=0, namespace="prod")
    dev = testing.workload(catalog, 2, priority=1, namespace="dev")
    request = testing.preemption_request(
        catalog,
        testing.workload(catalog, 9, priority=100),
        requests={0: 5},
        candidates=[testing.candidate(prod, usage={0: 5}), testing.candidate(dev, usage={0: 5})],
        usage={0: {0: 10}},
    )
    policy = Policy()
    policy.catalog_changed(catalog)
    assert policy.needs(catalog) == Needs.IDENTITY
    assert policy.select_victims(catalog, request) == KueueAmong([1])
