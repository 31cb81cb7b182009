"""Placement: the request's tree, and simple_fit's answers checked as the host checks them."""

from wasq_policy import ConstraintMode, NoFit, Placed, testing
from wasq_policy.placement import PlacementRuntime, PlacementPolicy, export, simple_fit, to_wit
from wasq_policy.testing import CatalogBuilder
from wasq_policy import wit

LEVELS = ["block", "rack", "kubernetes.io/hostname"]
REQUIRED, PREFERRED, UNCONSTRAINED = ConstraintMode.REQUIRED, ConstraintMode.PREFERRED, ConstraintMode.UNCONSTRAINED


def node(pods, gpus=0):
    """A node's free capacity: pods (1000 per pod) and GPUs (milli-units)."""
    return [pods * 1000, gpus * 1000]


TOPOLOGY = {
    "b1": {"r1": {"n1": node(5), "n2": node(5)},
           "r2": {"n3": node(8)}},
    "b2": {"r3": {"n4": node(3), "n5": node(3), "n6": node(2)}},
}


def request(count, **kw):
    cat = CatalogBuilder().flavor("tas").build()
    return testing.placement_request(cat, testing.workload(cat, 1), kw.pop("topology", TOPOLOGY),
                                     levels=LEVELS, resources=["pods", "nvidia.com/gpu"],
                                     count=count, per_pod=kw.pop("per_pod", [1000, 0]), **kw)


def check(req, answer):
    """The host's checks of a placement; returns pods per leaf."""
    assert isinstance(answer, Placed), answer
    pods = dict(answer.pods)
    assert len(pods) == len(answer.pods), "each leaf once"
    assert sum(pods.values()) == req.count
    leader = answer.leader
    assert (leader is not None) == (req.leader is not None)
    for leaf, n in pods.items():
        assert req.eligible(leaf) and n >= 1
        room = req.fits_with_leader(leaf) if leaf == leader else req.fits_on(leaf)
        assert n <= room, (leaf, n, room)
    if leader is not None:
        assert req.eligible(leader) and req.fits_with_leader(leader) is not None
    used = [req.leaf_domain(l) for l in pods] + ([req.leaf_domain(leader)] if leader is not None else [])
    c = req.constraint
    if c.mode == REQUIRED:
        assert len({req.ancestor_at(d, c.level) for d in used}) <= 1, "one domain of the level"
    sizes = {level: c.slice_size for level in range(c.slice_level + 1)}
    previous = c.slice_level
    for layer in c.layers:
        sizes.update({level: layer.size for level in range(previous + 1, layer.level + 1)})
        previous = layer.level
    for level, size in sizes.items():
        per_domain = {}
        for leaf, n in pods.items():
            d = req.ancestor_at(req.leaf_domain(leaf), level)
            per_domain[d] = per_domain.get(d, 0) + n
        assert all(n % size == 0 for n in per_domain.values()), (level, size, per_domain)
    return pods


def names(req, pods):
    _, _, domain_names = testing.tree(TOPOLOGY)
    return {domain_names[req.leaf_domain(leaf)]: n for leaf, n in pods.items()}


def test_the_tree_reads_levels_children_and_capacity():
    req = request(1)
    assert req.level_names == LEVELS and req.resource_names == ["pods", "nvidia.com/gpu"]
    assert req.topology == "topology" and req.flavor_name == "tas" and req.lowest == 2
    # Depth first: b1 0, r1 1, n1 2, n2 3, r2 4, n3 5, b2 6, r3 7, n4 8, n5 9, n6 10.
    assert req.at_level(0) == [0, 6] and req.children(0) == [1, 4] and req.parent(1) == 0
    assert req.ancestor_at(req.leaf_domain(3), 0) == 6 and req.ancestor_at(9, 1) == 7
    assert req.free(0, 0) == 18000 and req.resource("nvidia.com/gpu") == 1
    assert [req.fits_on(l) for l in range(6)] == [5, 5, 8, 3, 3, 2]
    assert req.pods_fitting(6) == 8 and req.leaf_of(0) is None and req.leaf_of(2) == 0


def test_required_takes_the_tightest_domain_that_holds_every_pod():
    req = request(8, mode=REQUIRED, level=1)
    assert names(req, check(req, simple_fit(req))) == {"n3": 8}
    req = request(10, mode=REQUIRED, level=1)
    assert names(req, check(req, simple_fit(req))) == {"n1": 5, "n2": 5}


def test_required_that_fits_nowhere_is_no_fit():
    req = request(11, mode=REQUIRED, level=1)
    assert simple_fit(req) == NoFit('topology "topology" allows to fit only 10 out of 11 pod(s)')


def test_preferred_goes_up_a_level_then_anywhere():
    req = request(12, mode=PREFERRED, level=1)
    pods = check(req, simple_fit(req))
    assert set(names(req, pods)) <= {"n1", "n2", "n3"}, "block b1 holds them"
    req = request(20, mode=PREFERRED, level=1)
    assert sum(check(req, simple_fit(req)).values()) == 20
    assert isinstance(simple_fit(request(27, mode=PREFERRED, level=1)), NoFit)


def test_unconstrained_fills_the_fullest_domains_first_and_skips_ineligible_leaves():
    req = request(9, ineligible=["n3"])
    pods = names(req, check(req, simple_fit(req)))
    assert pods == {"n1": 5, "n2": 4}


def test_slices_stay_whole_in_their_domains():
    # Slices of 4 pods within a rack: r1 holds 8, r2 holds 8, r3 (3+3+2) holds 8.
    req = request(12, mode=REQUIRED, level=0, slice_level=1, slice_size=4)
    check(req, simple_fit(req))
    # Slices of 3 per rack, in pairs per node (a further layer at the node level): n4, n5
    # hold 2 each and n6 2: r3 holds 6 in pairs -> 6 is a whole number of slices.
    req = request(6, mode=REQUIRED, level=1, slice_level=1, slice_size=6, layers=[(2, 2)])
    pods = names(req, check(req, simple_fit(req)))
    assert pods in ({"n1": 4, "n2": 2}, {"n3": 6}, {"n4": 2, "n5": 2, "n6": 2})


def test_a_leader_goes_where_it_fits_next_to_the_pods():
    topology = {"b1": {"r1": {"n1": node(4, 0), "n2": node(4, 1)}}}
    req = request(7, topology=topology, per_pod=[1000, 0], leader=[1000, 1000],
                  mode=REQUIRED, level=1)
    answer = simple_fit(req)
    pods = check(req, answer)
    assert answer.leader == 1 and pods == {0: 4, 1: 3}
    assert isinstance(simple_fit(request(8, topology=topology, leader=[1000, 1000],
                                         mode=REQUIRED, level=1)), NoFit)


class Fit(PlacementPolicy):
    def place(self, catalog, request):
        return simple_fit(request)


def test_the_runtime_answers_the_wit_variant():
    req = request(3, mode=REQUIRED, level=1)
    exported = export(Fit)()
    exported.set_catalog(req.catalog.raw)
    (answer,) = exported.place(None, [req.raw])
    # The tightest racks holding 3 are r2 and r3 (8 each): r2 comes first; its one leaf is n3.
    assert answer == wit.Answer_Placed(wit.Placement([wit.LeafPods(2, 3)], None))
    assert to_wit(NoFit("no room")) == wit.Answer_NoFit("no room")
    rt = PlacementRuntime(PlacementPolicy)
    rt.set_catalog(req.catalog.raw)
    try:
        rt.place(None, [req.raw])
    except NotImplementedError as e:
        assert "does not define place()" in str(e)
    else:
        raise AssertionError("a policy without place() must trap")
