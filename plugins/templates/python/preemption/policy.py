"""{{name}}: a preemption policy for wasq.

Describe here what the policy does and how it differs from Kueue's default. As generated, it
is Kueue's victim selection (run by the host) over the candidates that are not in a protected
namespace: the namespaces of the setting ``namespaces``
(``pluginSettings.{{name}}.namespaces: "prod,payments"`` in the wasq ``--config`` file;
default ``prod``). When the preemptor cannot fit without a protected victim, it waits.
"""

import wasq_policy
from wasq_policy import Needs, kueue
from wasq_policy.preemption import KueueAmong, PreemptionPolicy


class Policy(PreemptionPolicy):
    """The SDK builds it once per plugin instance; keep state in its attributes."""

    def __init__(self):
        self.protected = set()

    def catalog_changed(self, catalog):
        # Settings come with the catalog: read them here.
        self.protected = set(catalog.setting_list("namespaces", "prod"))

    def needs(self, catalog):
        # What Kueue's selection reads, and who the candidates are (their namespaces).
        return kueue.preemption_needs(catalog) | Needs.IDENTITY

    def select_victims(self, catalog, request):
        # Each candidate says who it is (namespace, job_kind, job_name, label(key),
        # annotation(key)), what it holds (usage), its priority, times and requeue history,
        # and how it relates to the preemptor (kind, lca, evicting). Answer KueueAmong(...)
        # to let Kueue choose among some candidates, Victims([...], allow_borrowing=...) to
        # choose yourself (check the fit on request.quota()), or NO_VICTIMS.
        return KueueAmong(c for c in request.candidates if c.namespace not in self.protected)


Preemption = wasq_policy.preemption.export(Policy)
