"""Tests of {{name}} in plain CPython: `python3 -m pytest`."""

from policy import Policy

from wasq_policy.dispatch import Settings
from wasq_policy.testing import check_dispatch, dispatch_cluster, dispatch_request


def test_a_workload_with_a_region_goes_to_that_regions_clusters_only():
    clusters = [dispatch_cluster(name, labels={"region": region})
                for name, region in [("eu-1", "eu"), ("us-1", "us"), ("eu-2", "eu")]]
    policy = Policy()
    settings = Settings()
    policy.settings_changed(settings)
    # No region: every connected cluster, by name.
    request = dispatch_request(0, clusters)
    assert policy.dispatch(settings, request).nominate == [0, 2, 1]
    answer = policy.dispatch(settings, dispatch_request(0, clusters, labels={"wasq.dev/region": "eu"}))
    assert answer.nominate == [0, 2]
    assert check_dispatch(request, answer) is None
    # A region no cluster serves: Kueue's answer.
    elsewhere = dispatch_request(0, clusters, labels={"wasq.dev/region": "ap"})
    assert len(policy.dispatch(settings, elsewhere).nominate) == 3
