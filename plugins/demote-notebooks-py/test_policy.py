"""demote-notebooks-py's decisions, in plain CPython (no component needed)."""

from policy import DEFAULT_KINDS, DemoteNotebooks

from wasq_policy import Needs, kueue, testing
from wasq_policy.testing import CatalogBuilder


def setup(setting=None):
    builder = CatalogBuilder()
    if setting is not None:
        builder.setting("kinds", setting)
    catalog = builder.build()
    notebook = testing.workload(catalog, 1, priority=100, created=0, namespace="ml",
                                owner=("Notebook", "kubeflow.org/v1", "explore"))
    job = testing.workload(catalog, 2, cluster_queue=1, priority=1, created=50, namespace="ml",
                           owner=("Job", "batch/v1", "train"))
    bare = testing.workload(catalog, 3, priority=0, created=60, namespace="ml")
    policy = DemoteNotebooks()
    policy.catalog_changed(catalog)
    return catalog, policy, notebook, job, bare


def test_notebooks_queue_after_batch_jobs():
    catalog, policy, notebook, job, bare = setup()
    key = lambda w: policy.sort_key(catalog, w, 0)  # noqa: E731
    # Kueue would take the notebook first (priority 100).
    assert kueue.sort_key(notebook) < kueue.sort_key(job)
    assert key(job) < key(notebook)
    assert key(bare) < key(notebook), "a bare Workload is not demoted"
    assert key(notebook) == (1, -100, 0)
    assert key(job) == (0, -1, 50)


def test_notebook_heads_are_tried_after_the_others():
    catalog, policy, notebook, job, _ = setup()
    heads = testing.heads(catalog, [testing.head(notebook), testing.head(job)])
    assert kueue.order_heads(heads) == [0, 1]
    assert policy.order_heads(catalog, heads, 0) == [1, 0]
    # Other kinds configured: the notebook keeps Kueue's place.
    policy.catalog_changed(CatalogBuilder().setting("kinds", "RayCluster").build())
    assert policy.order_heads(catalog, heads, 0) == [0, 1]


def test_second_passes_keep_their_place_and_groups_keep_kueues_order():
    catalog, policy, notebook, job, bare = setup()
    heads = testing.heads(catalog, [
        testing.head(job, borrowing_level=1),
        testing.head(notebook, second_pass=True),
        testing.head(bare),
    ])
    # Kueue: the second pass first, then bare (level 0), then job (level 1).
    assert kueue.order_heads(heads) == [1, 2, 0]
    assert policy.order_heads(catalog, heads, 0) == [1, 2, 0]


def test_settings_and_needs():
    assert DEFAULT_KINDS == "Notebook"
    _, policy, *_ = setup("Notebook, RayCluster,,")
    assert policy.kinds == {"Notebook", "RayCluster"}
    # The Rust plugin keeps the SDK's default needs: identity and podSets.
    assert policy.needs(CatalogBuilder().build()) == Needs.IDENTITY | Needs.POD_SETS
