"""The flavor-assignment runtime and request views."""

import pytest

from wasq_policy import FitMode, testing, wit
from wasq_policy.flavor_assignment import FlavorAssignmentPolicy, FlavorAssignmentRuntime, export
from wasq_policy.testing import CatalogBuilder, capture_logs


def catalog():
    return (CatalogBuilder().flavor("spot").flavor("on-demand")
            .flavor_annotation(1, "wasq.dev/cost", "5").cluster_queue("cq").build())


class Cheapest(FlavorAssignmentPolicy):
    def choose_flavor(self, catalog, request):
        fitting = [o for o in request.options if o is not None and o.fits]
        return min(fitting, key=lambda o: int(o.annotation("wasq.dev/cost") or 0), default=None)


def raw_request(options, cq=0):
    return wit.FlavorRequest(workload=wit.Workload(id=1, cluster_queue=cq, pod_sets=[testing.pod_set(2)]),
                             pod_set=0, requests=[], options=options)


def test_options_read_their_flavor_and_answers_are_indices():
    rt = FlavorAssignmentRuntime(Cheapest)
    rt.set_catalog(catalog().raw)
    o = testing.option
    got = rt.choose_flavors(None, [
        raw_request([o(1, FitMode.FIT), o(0, FitMode.FIT)]),
        raw_request([None, o(1, FitMode.PREEMPT)]),
    ])
    assert got == [1, None]


def test_the_default_is_kueues_choice_and_the_request_reads_its_pod_set():
    cat = catalog()
    req = testing.flavor_request(cat, testing.workload(cat, 1, pod_sets=[testing.pod_set(3)]),
                                 [testing.option(0, FitMode.PREEMPT), testing.option(1, FitMode.FIT)])
    assert FlavorAssignmentPolicy().choose_flavor(cat, req) == 1 == req.kueue_choice()
    assert req.options[1].flavor_name == "on-demand" and req.pod_set_spec.count == 3
    exported = export(FlavorAssignmentPolicy)()
    exported.set_catalog(cat.raw)
    assert exported.choose_flavors(None, [raw_request([None, testing.option(0)])]) == [1]


def test_a_negative_index_traps_with_a_log_line():
    class Bad(FlavorAssignmentPolicy):
        def choose_flavor(self, catalog, request):
            return -1

    rt = FlavorAssignmentRuntime(Bad)
    rt.set_catalog(catalog().raw)
    with capture_logs() as lines, pytest.raises(ValueError):
        rt.choose_flavors(None, [raw_request([testing.option(0)])])
    assert "Bad.choose_flavor raised ValueError" in lines[0][1]
