"""{{name}}: a flavor-assignment policy for wasq.

Describe here what the policy does and how it differs from Kueue's default. As generated, it
takes the last flavor (in the ClusterQueue's order) that fits without preemption, and Kueue's
choice when none does.
"""

import wasq_policy
from wasq_policy.flavor_assignment import FlavorAssignmentPolicy


class Policy(FlavorAssignmentPolicy):
    """The SDK builds it once per plugin instance; keep state in its attributes."""

    def choose_flavor(self, catalog, request):
        # request.options: one per flavor of the resource group, in the ClusterQueue's order;
        # None where the flavor cannot host the podSet. Each option has flavor_name, mode
        # (FitMode.FIT, PREEMPT, ...), borrow_level and annotation(key). request.workload says
        # who asks. Answer an option (or its index), or None to assign no flavor this cycle.
        fitting = [o for o in request.options if o is not None and o.fits]
        if fitting:
            return fitting[-1]
        return request.kueue_choice()


FlavorAssignment = wasq_policy.flavor_assignment.export(Policy)
