"""Catalog lookups, settings, and who workloads are (strings resolved)."""

from wasq_policy import Catalog, RequeueReason, testing, wit
from wasq_policy.testing import CatalogBuilder


def test_settings_names_and_annotations():
    cat = (CatalogBuilder().flavor("spot", ["cpu", "nvidia.com/gpu"]).flavor("on-demand")
           .flavor_annotation(0, "wasq.dev/cost", "3").cluster_queue("cq")
           .node_annotation(0, "example.com/team", "ml")
           .setting("namespaces", " prod, ,payments ").setting("x", "1").build())
    assert cat.setting("x") == "1" and cat.setting("y") is None and cat.setting("y", "d") == "d"
    assert cat.setting_list("namespaces") == ["prod", "payments"]
    assert cat.setting_list("absent", "Notebook") == ["Notebook"]
    assert (cat.resource("nvidia.com/gpu"), cat.flavor("on-demand"), cat.flavor("none")) == (1, 1, None)
    assert cat.flavor_resource(0, 1) == 1 and cat.flavor_resource_name(1) == "spot/nvidia.com/gpu"
    assert cat.flavor_annotation(0, "wasq.dev/cost") == "3"
    assert cat.flavor_annotation(1, "wasq.dev/cost") is None
    assert cat.node_annotation(0, "example.com/team") == "ml"
    assert cat.cluster_queue_named("cq") == 0
    assert cat.generation == 1 and cat.flavors[1].name == "on-demand", "WIT fields read through"


def test_a_catalog_converts_enums_of_other_bindings_by_value():
    class NodeKind(__import__("enum").Enum):  # stands for componentize-py's generated enum
        CLUSTER_QUEUE = 0
        COHORT = 1

    raw = wit.Catalog(nodes=[wit.Node("c", NodeKind.COHORT), wit.Node("q", NodeKind.CLUSTER_QUEUE, 0)])
    cat = Catalog(raw)
    assert cat.nodes[0].kind is wit.NodeKind.COHORT and cat.is_cohort(0)
    assert cat.children(0) == [1]


def test_workloads_resolve_their_identity_through_the_string_table():
    cat = CatalogBuilder().cluster_queue("cq").local_queue("team-a", "main", 0).build()
    wl = testing.workload(
        cat, 1, priority=5, created=100, local_queue=0, namespace="team-a",
        owner=("RayJob", "ray.io/v1", "train"), labels={"kueue.x-k8s.io/tier": "gold"},
        annotations={"wasq.dev/cost": "3"}, requeue_count=2,
        requeue_reason=RequeueReason.PODS_READY_TIMEOUT)
    assert (wl.namespace, wl.job_kind, wl.job_api_version, wl.job_name) == (
        "team-a", "RayJob", "ray.io/v1", "train")
    assert wl.owner == ("RayJob", "ray.io/v1", "train")
    assert wl.local_queue_name == "main"
    assert wl.label("kueue.x-k8s.io/tier") == "gold" and wl.label("other") is None
    assert wl.labels == {"kueue.x-k8s.io/tier": "gold"}
    assert wl.annotation("wasq.dev/cost") == "3" and wl.annotation("kueue.x-k8s.io/tier", "-") == "-"
    assert wl.requeued_at_least(2) and not wl.requeued_at_least(3)
    assert wl.requeue_reason is RequeueReason.PODS_READY_TIMEOUT
    bare = testing.workload(cat, 2)
    assert (bare.namespace, bare.owner, bare.job_kind, bare.labels, bare.has_identity) == (
        "", None, None, {}, False)
    assert bare.local_queue_name is None and bare.pod_sets[0].count == 1


def test_total_request_sums_pod_sets():
    cat = CatalogBuilder().build()
    wl = testing.workload(cat, 1, pod_sets=[testing.pod_set(4, {0: 1000, 1: 2000}), testing.pod_set(2, {0: 500})])
    assert (wl.total_request(0), wl.total_request(1), wl.total_request(2)) == (5000, 8000, 0)
