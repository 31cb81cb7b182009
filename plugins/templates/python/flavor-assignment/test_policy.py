"""Tests of {{name}} in plain CPython: `python3 -m pytest`."""

from policy import Policy

from wasq_policy import FitMode, testing
from wasq_policy.testing import CatalogBuilder, option


def test_last_fitting_flavor_else_kueue():
    catalog = CatalogBuilder().flavor_resources(3).cluster_queue("cq").build()
    workload = testing.workload(catalog, 1)
    policy = Policy()

    def choose(*options):
        return policy.choose_flavor(catalog, testing.flavor_request(catalog, workload, list(options)))

    assert choose(option(0), None, option(2)).index == 2
    # None fits without preemption: Kueue's choice (the first that can preempt).
    assert choose(option(0, FitMode.PREEMPT), option(1, FitMode.NO_FIT)) == 0
    assert choose(None, option(1, FitMode.NO_FIT)) is None
