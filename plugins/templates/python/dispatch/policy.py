"""{{name}}: a MultiKueue dispatch policy for wasq: which worker clusters get a copy of a
workload.

Describe here what the policy does and how it differs from Kueue's default. As generated, a
workload labelled ``wasq.dev/region`` is copied only to the connected clusters whose
MultiKueueCluster carries the same value under the label named by the ``clusterLabel``
setting (default ``region``); any other workload, or one whose region no connected cluster
serves, is dispatched as Kueue's all-at-once dispatcher does (every connected cluster).
"""

import wasq_policy
from wasq_policy.dispatch import DispatchPolicy, Only, all_at_once


class Policy(DispatchPolicy):
    """The SDK builds it once per plugin instance; keep state in its attributes."""

    def __init__(self):
        #: The MultiKueueCluster label that names a cluster's region.
        self.cluster_label = "region"

    def settings_changed(self, settings):
        self.cluster_label = settings.get("clusterLabel", "region")

    def dispatch(self, settings, request):
        region = request.workload.label("wasq.dev/region")
        if region is not None:
            same_region = Only(request, lambda c: c.label(self.cluster_label) == region)
            answer = all_at_once(same_region)
            if answer.nominate:
                return answer
        # Kueue's answer (`incremental(request, request, step)` is its other dispatcher).
        return all_at_once(request)


Dispatch = wasq_policy.dispatch.export(Policy)
