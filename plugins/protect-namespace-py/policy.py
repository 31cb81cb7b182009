"""protect-namespace-py: preemption that never chooses a victim in a protected namespace.

Kueue's victim selection (classical, or fair sharing's when it is on), run by the host over
the candidates whose Workload is not in one of the namespaces of the plugin's setting
``namespaces`` (``pluginSettings.protect-namespace-py.namespaces: "prod,payments"`` in the wasq
``--config`` file; comma-separated; default ``prod``). When the preemptor cannot fit without a
protected victim it waits, as if those workloads were not preemptible.

The Python port of ``plugins/protect-namespace``: the same decisions, and the same ``needs``
(Kueue's, plus who the candidates are), so that the host sends the same requests.
"""

import wasq_policy
from wasq_policy import Needs, kueue
from wasq_policy.preemption import KueueAmong, PreemptionPolicy

#: The setting listing the protected namespaces, and its default.
SETTING, DEFAULT_NAMESPACES = "namespaces", "prod"


class ProtectNamespace(PreemptionPolicy):
    def __init__(self):
        self.protected = set()

    def catalog_changed(self, catalog):
        self.protected = set(catalog.setting_list(SETTING, DEFAULT_NAMESPACES))

    def needs(self, catalog):
        # What Kueue's selection reads, and who the candidates are.
        return kueue.preemption_needs(catalog) | Needs.IDENTITY

    def select_victims(self, catalog, request):
        return KueueAmong(c for c in request.candidates if c.namespace not in self.protected)


Preemption = wasq_policy.preemption.export(ProtectNamespace)
