"""demote-notebooks-py: admission ordering that sends workloads of some job kinds after the
others: interactive notebooks wait behind batch jobs.

A workload whose owning job's kind is listed in the plugin's setting ``kinds``
(``pluginSettings.demote-notebooks-py.kinds: "Notebook,RayCluster"`` in the wasq ``--config``
file; comma-separated; default ``Notebook``) is queued after every workload of other kinds in
its ClusterQueue, and its ClusterQueue head is tried after the heads of other kinds in a cycle.
Within each group the order is Kueue's classical one: queue key ``(-priority, created)``; heads
by second pass first, then lower borrowing level, higher priority, older. Second passes keep
their place, as in Kueue. Bare Workloads (no owner) are not demoted.

The Python port of ``plugins/demote-notebooks``: the same decisions and the same ``needs``
(the SDK's default: identity and podSets).
"""

import wasq_policy
from wasq_policy import kueue
from wasq_policy.ordering import OrderingPolicy, SortKey

#: The setting listing the demoted job kinds, and its default.
SETTING, DEFAULT_KINDS = "kinds", "Notebook"


class DemoteNotebooks(OrderingPolicy):
    def __init__(self):
        self.kinds = set()

    def catalog_changed(self, catalog):
        self.kinds = set(catalog.setting_list(SETTING, DEFAULT_KINDS))

    def demoted(self, who):
        """Whether a workload (or head) is owned by a job of a demoted kind."""
        return who.job_kind is not None and who.job_kind in self.kinds

    def sort_key(self, catalog, workload, now):
        primary, secondary, _ = kueue.sort_key(workload)
        return SortKey(int(self.demoted(workload)), primary, secondary)

    def order_heads(self, catalog, heads, now):
        # Stable: Kueue's order within each group; second passes stay first.
        order = kueue.order_heads(heads)
        return sorted(order, key=lambda i: (not heads[i].second_pass, self.demoted(heads[i])))


Ordering = wasq_policy.ordering.export(DemoteNotebooks)
