"""kueue-default-dispatch-py's decisions, in plain CPython (no component needed): those of
`plugins/kueue-default-dispatch`'s own tests."""

from policy import KueueDispatch

from wasq_policy import testing
from wasq_policy.dispatch import ROUND_MS, Answer, Settings
from wasq_policy.testing import dispatch_cluster, dispatch_request


def configured(pairs):
    p = KueueDispatch()
    p.settings_changed(Settings(pairs))
    return p.step


def test_settings_choose_the_dispatcher_and_its_step():
    assert configured({}) is None
    assert configured({"dispatcher": "all-at-once", "stepSize": "2"}) is None
    assert configured({"dispatcher": "incremental"}) == 3
    assert configured({"dispatcher": "incremental", "stepSize": "1"}) == 1
    with testing.capture_logs() as lines:
        assert configured({"dispatcher": "incremental", "stepSize": "0"}) == 3
        assert configured({"dispatcher": "x"}) is None
    assert [m for _, m in lines] == [
        'stepSize "0" is not a positive integer; using 3',
        'dispatcher "x" is neither all-at-once nor incremental; using all-at-once',
    ]


def test_incremental_adds_a_step_per_round():
    clusters = [dispatch_cluster("c"), dispatch_cluster("a"), dispatch_cluster("b")]
    settings = {"dispatcher": "incremental", "stepSize": "1"}
    first = testing.run_dispatch(KueueDispatch, [dispatch_request(0, clusters)], settings)
    assert first == [Answer([0], ROUND_MS)]
    later = dispatch_request(ROUND_MS, clusters, nominated=[0], last_nominated=0)
    assert testing.run_dispatch(KueueDispatch, [later], settings)[0].nominate == [0, 1]
    assert testing.run_dispatch(KueueDispatch, [later])[0].nominate == [1, 2, 0]
