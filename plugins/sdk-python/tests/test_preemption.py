"""The preemption runtime, driven with what the host sends: rows kept between calls, strings,
candidates joined with their groups and shares, kept usage, answers, errors."""

import pytest

from wasq_policy import NO_VICTIMS, CandidateKind, KueueAmong, Needs, Victims, kueue, testing, wit
from wasq_policy.preemption import PreemptionPolicy, PreemptionRuntime, export, to_wit
from wasq_policy.testing import CatalogBuilder, capture_logs


class Recorder(PreemptionPolicy):
    """Records what it was asked; answers Kueue's victims."""

    def __init__(self):
        self.seen = []
        self.catalogs = 0

    def catalog_changed(self, catalog):
        self.catalogs += 1

    def select_victims(self, catalog, request):
        self.seen.append(request)
        return kueue.select_victims(request)


def catalog():
    """cohort(0) <- a(1) nominal 10, b(2) nominal 6; one flavor-resource; two LocalQueues."""
    return (CatalogBuilder().flavor_resources(1)
            .cohort("cohort").cluster_queue("a", 0).quota(1, 0, 10)
            .cluster_queue("b", 0).quota(2, 0, 6)
            .local_queue("team", "main", 0).local_queue("team", "other", 1)
            .build())


def who(ns):
    return wit.WorkloadIdentity(namespace=ns)


def admitted(workload, cq=0, lq=None, ns=None, usage=5):
    return wit.AdmittedRow(workload=workload, cluster_queue=cq, local_queue=lq,
                           priority=workload, admitted=workload * 10,
                           usage=[wit.FrAmount(0, usage)], identity=ns)


def request(candidates, groups, *, usage=(), kept=True, shares=(), frs=(0,)):
    return wit.PreemptionRequest(
        preemptor=wit.Workload(id=99, cluster_queue=0, priority=50),
        requests=[wit.FrAmount(fr, 5) for fr in frs], needs_preemption=list(frs),
        candidates=list(candidates), groups=list(groups),
        local_queue_usage=list(shares), usage_kept=kept, usage=list(usage))


def runtime():
    rt = PreemptionRuntime(Recorder)
    cat = catalog()
    rt.set_catalog(cat.raw)
    return rt


def test_set_catalog_builds_the_policy_once_and_answers_its_needs():
    rt = PreemptionRuntime(Recorder)
    assert rt.set_catalog(catalog().raw) == Needs.IDENTITY | Needs.POD_SETS
    rt.set_catalog(catalog().raw)
    assert rt.policy.catalogs == 2


def test_rows_strings_and_groups_are_joined_per_candidate_across_calls():
    rt = runtime()
    group = wit.CandidateGroup
    rt.select_victims(
        wit.NewStrings(0, ["prod", "dev"]),
        wit.NewRows(0, [admitted(1, ns=who(0)), admitted(2, cq=1, lq=1, ns=who(1))]),
        [request([1, 0], [group(CandidateKind.RECLAIM_WHILE_BORROWING, 0, True, [1]),
                          group(CandidateKind.SAME_QUEUE, None, False, [0])],
                 shares=[wit.LocalQueueShare(1, 2.5), wit.LocalQueueShare(7, 9.0)])])
    (req,) = rt.policy.seen
    c0, c1 = req.candidates
    assert (c0.index, c0.workload, c0.namespace, c0.kind, c0.lca, c0.evicting) == (
        0, 2, "dev", CandidateKind.RECLAIM_WHILE_BORROWING, 0, True)
    assert (c0.local_queue_usage, c0.local_queue_name) == (2.5, "other")
    assert (c1.index, c1.workload, c1.namespace, c1.kind, c1.lca, c1.evicting) == (
        1, 1, "prod", CandidateKind.SAME_QUEUE, None, False)
    assert c1.local_queue_usage is None
    # Next call: row 2 is new, rows 0 and 1 are named by id only, no strings sent.
    rt.select_victims(None, wit.NewRows(2, [admitted(3, ns=who(1))]),
                      [request([2, 0], [group(CandidateKind.SAME_QUEUE, None, False, [2, 0])])])
    req = rt.policy.seen[-1]
    assert [(c.workload, c.namespace, c.admitted) for c in req.candidates] == [
        (3, "dev", 30), (1, "prod", 10)]


def test_a_string_restart_renames_ids_and_never_sent_rows_read_empty():
    rt = runtime()
    group = wit.CandidateGroup(CandidateKind.SAME_QUEUE, None, False, [0, 5])
    rt.select_victims(wit.NewStrings(0, ["prod"]), wit.NewRows(0, [admitted(1, ns=who(0))]),
                      [request([0], [group])])
    rt.select_victims(wit.NewStrings(0, ["staging"]), wit.NewRows(0, [admitted(4, ns=who(0))]),
                      [request([0, 5], [group])])
    c0, c5 = rt.policy.seen[-1].candidates
    assert (c0.workload, c0.namespace) == (4, "staging")
    assert (c5.workload, c5.cluster_queue, c5.usage, c5.namespace, c5.has_identity) == (
        0, 0, [], "", False)


def test_a_new_catalog_starts_a_new_table_of_rows():
    rt = runtime()
    group = wit.CandidateGroup(CandidateKind.SAME_QUEUE, None, False, [0])
    rt.select_victims(None, wit.NewRows(0, [admitted(1), admitted(2)]), [request([0], [group])])
    rt.set_catalog(catalog().raw)
    # The table starts again after set-catalog: rows not sent since read empty.
    rt.select_victims(None, None,
                      [request([0, 1], [wit.CandidateGroup(CandidateKind.SAME_QUEUE, None,
                                                            False, [0, 1])])])
    c0, c1 = rt.policy.seen[-1].candidates
    assert (c0.workload, c0.usage, c1.workload, c1.usage) == (0, [], 0, [])


def test_a_candidate_in_no_group_reads_as_same_queue():
    rt = runtime()
    rt.select_victims(None, wit.NewRows(0, [admitted(1)]), [request([0], [])])
    (c,) = rt.policy.seen[-1].candidates
    assert (c.kind, c.lca, c.evicting) == (CandidateKind.SAME_QUEUE, None, False)


def test_kept_usage_accumulates_over_requests_and_calls_until_the_next_catalog():
    rt = runtime()
    same = [wit.CandidateGroup(CandidateKind.SAME_QUEUE, None, False, [0])]
    rows = wit.NewRows(0, [admitted(1)])
    every = [testing.node_usage(0, {0: 3}), testing.node_usage(1, {0: 9}),
             testing.node_usage(2, {0: 2})]
    first = request([0], same, usage=every)
    changed = request([0], same, usage=[testing.node_usage(1, {0: 4})])
    rt.select_victims(None, rows, [first, changed])
    one, two = rt.policy.seen
    # Each request reads usage as of itself: the first before the second's change.
    assert [two.usage(n, 0) for n in range(3)] == [3, 4, 2]
    assert one.quota().usage(1, 0) == 4, "views read the instance's usage, valid during a call"
    # Nothing sent: what was kept.
    rt.select_victims(None, None, [request([0], same)])
    req = rt.policy.seen[-1]
    assert [req.usage(n, 0) for n in range(3)] == [3, 4, 2]
    view = req.quota()
    view.remove_candidate(req.candidates[0])
    assert view.usage(1, 0) == -1 and req.usage(1, 0) == 4, "a view's changes stay in the view"
    # A flavor-resource the request does not ask for reads as 0.
    assert req.quota().usage(1, 1) == 0
    # A new catalog drops it.
    rt.set_catalog(catalog().raw)
    rt.select_victims(None, rows, [request([0], same)])
    assert rt.policy.seen[-1].usage(1, 0) == 0


def test_a_request_made_by_hand_reads_only_its_own_usage():
    rt = runtime()
    same = [wit.CandidateGroup(CandidateKind.SAME_QUEUE, None, False, [0])]
    rt.select_victims(None, wit.NewRows(0, [admitted(1)]), [
        request([0], same, usage=[testing.node_usage(1, {0: 8})]),
        request([0], same, usage=[testing.node_usage(2, {0: 1})], kept=False)])
    assert rt.policy.seen[-1].usage(1, 0) == 0 and rt.policy.seen[-1].usage(2, 0) == 1
    rt.select_victims(None, None, [request([0], same)])
    assert rt.policy.seen[-1].usage(1, 0) == 8, "the hand-made request kept nothing"


class Answers(PreemptionPolicy):
    def __init__(self):
        self.answers = []

    def select_victims(self, catalog, request):
        return self.answers.pop(0)


def test_answers_become_the_wit_variant():
    bindings = wit
    assert to_wit(NO_VICTIMS, bindings) == wit.Answer_NoVictims()
    assert to_wit(Victims([2, 0], allow_borrowing=False), bindings) == wit.Answer_Victims(
        wit.Victims([2, 0], False))
    assert to_wit(KueueAmong([3, 1, 3]), bindings) == wit.Answer_KueueAmong([1, 3])
    exported = export(Answers)()
    exported.set_catalog(catalog().raw)
    exported.runtime.policy.answers = [NO_VICTIMS, KueueAmong([0])]
    same = [wit.CandidateGroup(CandidateKind.SAME_QUEUE, None, False, [0])]
    got = exported.select_victims(None, wit.NewRows(0, [admitted(1)]),
                                  [request([0], same), request([0], same)])
    assert got == [wit.Answer_NoVictims(), wit.Answer_KueueAmong([0])]
    assert exported.set_catalog(catalog().raw) == wit.Needs.IDENTITY | wit.Needs.POD_SETS


def test_answers_take_candidates_and_reject_what_no_answer_can_name():
    req = testing.preemption_request(
        catalog(), testing.workload(catalog(), 9), {0: 1},
        [testing.candidate(testing.workload(catalog(), i)) for i in range(3)])
    assert Victims(req.candidates[1:], allow_borrowing=True).victims == (1, 2)
    assert KueueAmong(reversed(req.candidates)) == KueueAmong([0, 1, 2])
    with pytest.raises(ValueError):
        Victims([-1], allow_borrowing=True)
    with pytest.raises(TypeError):
        KueueAmong(["0"])
    with pytest.raises(TypeError):
        Victims([0])  # allow_borrowing must be said


def test_the_default_policy_is_kueues_choice():
    req = testing.preemption_request(
        catalog(), testing.workload(catalog(), 9), {0: 1},
        [testing.candidate(testing.workload(catalog(), i)) for i in range(3)])
    assert PreemptionPolicy().select_victims(catalog(), req) == KueueAmong([0, 1, 2])


class Broken(PreemptionPolicy):
    def select_victims(self, catalog, request):
        if request.preemptor.id == 1:
            raise RuntimeError("boom")
        return NO_VICTIMS


def test_an_exception_is_logged_then_raised_and_the_tables_stay_right():
    rt = PreemptionRuntime(Broken)
    rt.set_catalog(catalog().raw)
    same = [wit.CandidateGroup(CandidateKind.SAME_QUEUE, None, False, [0])]
    failing = request([0], same, usage=[testing.node_usage(1, {0: 3})])
    failing.preemptor = wit.Workload(id=1, cluster_queue=0)
    after = request([0], same, usage=[testing.node_usage(2, {0: 4})])
    with capture_logs() as lines, pytest.raises(RuntimeError):
        rt.select_victims(wit.NewStrings(0, ["x"]), wit.NewRows(0, [admitted(1)]), [failing, after])
    ((level, message),) = lines
    assert level == wit.Level.ERROR
    assert "Broken.select_victims raised RuntimeError: boom" in message
    assert "test_preemption.py" in message, message
    # The strings, the row and both requests' usage were filed.
    assert (rt.strings[0], rt.rows[0].workload) == ("x", 1)
    assert (rt.kept.get(1, 0), rt.kept.get(2, 0)) == (3, 4)


def test_a_wrong_answer_type_traps_with_a_message():
    class Forgot(PreemptionPolicy):
        def select_victims(self, catalog, request):
            pass

    rt = PreemptionRuntime(Forgot)
    rt.set_catalog(catalog().raw)
    with capture_logs() as lines, pytest.raises(TypeError, match="answer Victims"):
        rt.select_victims(None, wit.NewRows(0, [admitted(1)]), [request([0], [])])
    assert lines and lines[0][0] == wit.Level.ERROR
