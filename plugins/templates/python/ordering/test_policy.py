"""Tests of {{name}} in plain CPython: `python3 -m pytest`."""

from policy import Policy

from wasq_policy import testing
from wasq_policy.testing import CatalogBuilder


def test_higher_priority_then_older_first():
    catalog = CatalogBuilder().build()
    policy = Policy()
    high = testing.workload(catalog, 1, priority=10, created=200)
    low_old = testing.workload(catalog, 2, priority=1, created=100)
    low_new = testing.workload(catalog, 3, priority=1, created=300)
    key = lambda w: policy.sort_key(catalog, w, 0)  # noqa: E731
    assert key(high) < key(low_old) < key(low_new)


def test_heads_as_kueue():
    catalog = CatalogBuilder().build()
    old = testing.workload(catalog, 1, priority=1, created=100)
    high = testing.workload(catalog, 2, priority=9, created=200)
    reserved = testing.workload(catalog, 3, priority=0, created=300)
    heads = testing.heads(catalog, [
        testing.head(old),
        testing.head(high, borrowing_level=1),
        testing.head(reserved, second_pass=True),
    ])
    assert Policy().order_heads(catalog, heads, 0) == [2, 0, 1]
