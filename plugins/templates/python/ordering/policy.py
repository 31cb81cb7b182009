"""{{name}}: an admission-ordering policy for wasq.

Describe here what the policy does and how it differs from Kueue's default. As generated, it
orders as Kueue does: in a ClusterQueue, higher priority first, then older first; across a
cycle's heads, second passes first, then lower borrowing level, higher priority, older.
"""

import wasq_policy
from wasq_policy import kueue
from wasq_policy.ordering import OrderingPolicy, SortKey


class Policy(OrderingPolicy):
    """The SDK builds it once per plugin instance; keep state in its attributes."""

    def catalog_changed(self, catalog):
        # Settings come with the catalog: catalog.setting("name", "default").
        pass

    def sort_key(self, catalog, workload, now):
        # The key a workload is queued under, smallest first. Besides priority and times, a
        # workload says how often it was requeued and why (requeue_count, requeue_reason),
        # and who it is: namespace, job_kind ("Notebook", ...), job_name, local_queue_name,
        # label(key), annotation(key).
        return SortKey(-workload.priority, workload.created)

    def order_heads(self, catalog, heads, now):
        # The order of a cycle's heads (positions in `heads`, or the heads themselves). Each
        # head has the workload's fields, its second_pass and borrowing_level, and the `key`
        # sort_key gave it. Kueue's order:
        return kueue.order_heads(heads)

    # To read admission fair sharing's LocalQueue usage (workload.local_queue_usage) or the
    # quota usage of the heads' cohort trees (heads.tree_usage), say so in needs():
    #   def needs(self, catalog):
    #       return Needs.IDENTITY | Needs.TREE_USAGE


Ordering = wasq_policy.ordering.export(Policy)
