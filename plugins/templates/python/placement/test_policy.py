"""Tests of {{name}} in plain CPython: `python3 -m pytest`."""

from policy import Policy

from wasq_policy import ConstraintMode, Placed, testing
from wasq_policy.testing import CatalogBuilder

# Racks r1 (nodes with 8 and 2 free GPUs) and r2 (one node with 8); free pods and GPUs in
# milli-units per node.
RACKS = {
    "r1": {"n1": [110_000, 8_000], "n2": [110_000, 2_000]},
    "r2": {"n3": [110_000, 8_000]},
}


def request(count, **constraint):
    catalog = CatalogBuilder().flavor("tas").build()
    return catalog, testing.placement_request(
        catalog, testing.workload(catalog, 1), RACKS,
        levels=["rack", "kubernetes.io/hostname"], resources=["pods", "nvidia.com/gpu"],
        count=count, per_pod=[1000, 1000], **constraint)


def test_an_unconstrained_gang_goes_to_the_emptiest_rack():
    catalog, req = request(8)
    # r1 holds 10 and r2 8: r1 is emptier; its first node takes all 8.
    assert Policy().place(catalog, req) == Placed({0: 8})


def test_a_constrained_podset_is_placed_validly():
    catalog, req = request(9, mode=ConstraintMode.REQUIRED, level=0)
    assert Policy().place(catalog, req) == Placed({0: 8, 1: 1})
