"""Dispatch (MultiKueue): Kueue's dispatchers as the Rust SDK and the host have them, the
request's views, settings, the exported runtime and the host's checks."""

import pytest

from wasq_policy import testing, wit
from wasq_policy.dispatch import (
    DEFAULT_STEP,
    ROUND_MS,
    Answer,
    DispatchPolicy,
    Only,
    Settings,
    all_at_once,
    export,
    incremental,
    parse_step,
    to_wit,
)
from wasq_policy.testing import check_dispatch, dispatch_cluster, dispatch_request


def request(clusters, now=0, **kw):
    return dispatch_request(now, [dispatch_cluster(n, c) for n, c in clusters], **kw)


def test_kueues_dispatchers_over_the_request_and_over_part_of_it():
    req = request([("west", True), ("east", True), ("lost", False)])
    assert all_at_once(req) == Answer([1, 0])
    assert all_at_once(Only(req, lambda c: c.name == "west")).nominate == [0]
    first = incremental(req, req, 1)
    assert first == Answer([0], retry_after=ROUND_MS)
    assert req.cluster("east") == 1 and req.cluster("north") is None
    assert DEFAULT_STEP == 3 and ROUND_MS == 300_000


def test_incremental_adds_a_batch_per_round_in_config_order_and_never_revokes():
    clusters = [("c", True), ("a", True), ("b", False), ("d", True)]
    # First round: the first two connected clusters in the configuration's order.
    assert incremental(request(clusters), request(clusters), 2) == Answer([0, 1], ROUND_MS)
    # Within the round: unchanged, asked again when it ends.
    within = request(clusters, 60_000, nominated=[0, 1], last_nominated=0)
    assert incremental(within, within, 2) == Answer([0, 1], ROUND_MS - 60_000)
    # Next round: the one connected cluster left (b is not connected).
    next_round = request(clusters, ROUND_MS, nominated=[0, 1], last_nominated=0)
    assert incremental(next_round, next_round, 2) == Answer([0, 1, 3], ROUND_MS)
    # Only an unconnected one is left: nothing to add, nothing to wait for.
    done = request(clusters, 2 * ROUND_MS, nominated=[0, 1, 3], last_nominated=ROUND_MS)
    assert incremental(done, done, 2) == Answer([0, 1, 3])


def test_incremental_with_every_cluster_nominated_stops_asking():
    req = request([("a", True)])
    assert incremental(req, req) == Answer([0])
    # A step of 0 takes one, as Kueue's does.
    two = request([("a", True), ("b", True)])
    assert incremental(two, two, 0) == Answer([0], ROUND_MS)


def test_a_round_ending_past_the_s64_range_saturates_as_in_rust():
    req = request([("a", True), ("b", True)], now=2**62, nominated=[0],
                  last_nominated=2**63 - 1)
    assert incremental(req, req, 1) == Answer([0], 2**63 - 1 - 2**62)


def test_names_sort_by_code_point_as_rust_sorts_bytes():
    req = request([("\uff41", True), ("\U0001f600", True), ("b", True), ("B", True)])
    assert all_at_once(req).nominate == [3, 2, 0, 1]


def test_the_request_reads_as_the_host_sent_it():
    queue = testing.worker_queue("cq", pending=2, admitted=1,
                                 resources=[("gpu", "nvidia.com/gpu", 8000, 2000)])
    req = dispatch_request(
        5,
        [dispatch_cluster("eu", labels={"region": "eu"}, queue=queue, copy_since=3),
         dispatch_cluster("us", False, lost_since=1)],
        pod_sets=[("main", 4, {"nvidia.com/gpu": 1000, "cpu": 500})],
        labels={"wasq.dev/region": "eu"}, priority=7, nominated=[0], last_nominated=3)
    w = req.workload
    assert (w.namespace, w.name, w.local_queue, w.priority) == ("ns", "w", "lq", 7)
    assert w.label("wasq.dev/region") == "eu" and w.label("other") is None
    assert [q.name for q in w.pod_sets[0].per_pod] == ["cpu", "nvidia.com/gpu"]
    assert w.total_request("nvidia.com/gpu") == 4000
    eu, us = req.clusters
    assert (eu.index, eu.label("region"), eu.connected, eu.copy_since) == (0, "eu", True, 3)
    assert eu.queue.resources[0].usage == 2000 and eu.queue.pending == 2
    assert (us.connected, us.lost_since, us.queue) == (False, 1, None)
    assert (req.now, req.nominated, req.last_nominated) == (5, [0], 3)


def test_settings_are_read_by_key():
    s = Settings([("dispatcher", "incremental"), ("stepSize", "2"), ("stepSize", "9")])
    assert s.get("stepSize") == "2" and s.get("missing") is None
    assert s.get("missing", "x") == "x" and len(s.all()) == 3
    assert Settings({"k": " a, ,b "}).get_list("k") == ["a", "b"]
    assert Settings([wit.Setting("k", "v")]) == Settings({"k": "v"})


def test_step_sizes_parse_as_rusts_u32():
    assert [parse_step(v) for v in ["1", "+2", "4294967295", "007"]] == [1, 2, 2**32 - 1, 7]
    for bad in [None, "", "0", "-1", " 2", "2 ", "2.0", "4294967296", "²", "+"]:
        assert parse_step(bad) is None, bad


def test_answers_take_clusters_or_indices_and_check_their_form():
    req = request([("a", True), ("b", True)])
    assert Answer(req.clusters[1:]) == Answer([1])
    with pytest.raises(ValueError):
        Answer([-1])
    with pytest.raises(ValueError):
        Answer([0], retry_after=2**63)
    assert to_wit(Answer([1], 5)) == wit.DispatchAnswer([1], 5)


class Recording(DispatchPolicy):
    def __init__(self):
        self.seen = None

    def settings_changed(self, settings):
        self.seen = settings

    def dispatch(self, settings, request):
        assert settings is self.seen
        if settings.get("mode") == "bad":
            return [0]
        if settings.get("mode") == "far":
            return Answer([len(request.clusters)])
        return incremental(request, request, int(settings.get("step", "1")))


def test_the_exported_plugin_gets_its_settings_then_answers_each_request():
    plugin = export(Recording)()
    plugin.set_settings([wit.Setting("step", "2")])
    reqs = [request([("a", True), ("b", True), ("c", True)]).raw, request([("x", False)]).raw]
    assert plugin.dispatch(reqs) == [wit.DispatchAnswer([0, 1], ROUND_MS), wit.DispatchAnswer([], None)]
    assert plugin.runtime.policy.seen.get("step") == "2"
    # The default policy is Kueue's all-at-once.
    default = export(DispatchPolicy)()
    default.set_settings([])
    assert default.dispatch(reqs[:1]) == [wit.DispatchAnswer([0, 1, 2], None)]


def test_a_wrong_answer_is_logged_and_raised():
    req = request([("a", True)])
    for mode, error in [("bad", TypeError), ("far", ValueError)]:
        with testing.capture_logs() as lines, pytest.raises(error):
            testing.run_dispatch(Recording, [req], {"mode": mode})
        assert lines and lines[-1][0] == wit.Level.ERROR
        assert "dispatch policy Recording.dispatch raised" in lines[-1][1]


def test_run_dispatch_and_the_hosts_checks():
    req = request([("west", True), ("east", True), ("lost", False)],
                  nominated=[2], last_nominated=0)
    assert testing.run_dispatch(DispatchPolicy, [req]) == [Answer([1, 0])]
    assert check_dispatch(req, Answer([1, 0, 2], 5)) is None  # a lost nominee may stay
    fresh = request([("west", True), ("lost", False)])
    assert check_dispatch(fresh, Answer([1])) == "nominates lost, which is not connected"
    assert check_dispatch(fresh, Answer([0, 0])) == "nominates west twice"
    assert check_dispatch(fresh, Answer([2])) == "nominates cluster 2, but the request has 2"
    assert check_dispatch(fresh, Answer([0], 0)) == (
        "asks to be asked again after a time that is not positive")
    many = request([(f"c{i}", True) for i in range(21)])
    assert check_dispatch(many, all_at_once(many)) == "nominates 21 clusters, more than 20"
