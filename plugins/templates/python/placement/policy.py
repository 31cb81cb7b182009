"""{{name}}: a placement policy for wasq (topology-aware scheduling).

Describe here what the policy does and how it differs from Kueue's default. As generated, a
podSet that asks for no particular topology goes to the emptiest rack (the level above the
leaves) that holds all of it, rather than Kueue's least free capacity first; everything else
is placed by the SDK's ``simple_fit`` (a valid placement, not Kueue's BestFit: a placement
plugin answers every podSet itself, the WIT has no "Kueue's default" answer).
"""

import wasq_policy
from wasq_policy import ConstraintMode, Placed
from wasq_policy.placement import PlacementPolicy, simple_fit


class Policy(PlacementPolicy):
    """The SDK builds it once per plugin instance; keep state in its attributes."""

    def place(self, catalog, request):
        c = request.constraint
        if (c.mode != ConstraintMode.UNCONSTRAINED or request.lowest < 1
                or request.leader is not None or c.layers or c.slice_size > 1):
            return simple_fit(request)
        # The emptiest domain of the level above the leaves that holds every pod.
        racks = [d for d in request.at_level(request.lowest - 1)
                 if request.pods_fitting(d) >= request.count]
        if not racks:
            return simple_fit(request)
        rack = max(racks, key=lambda d: (request.pods_fitting(d), -d))
        # Fill its eligible leaves in order; the host checks capacity and eligibility again.
        pods, left = {}, request.count
        for d in request.children(rack):
            leaf = request.leaf_of(d)
            if leaf is None or not request.eligible(leaf) or left == 0:
                continue
            pods[leaf] = min(request.fits_on(leaf), left)
            left -= pods[leaf]
        return Placed(pods)


Placement = wasq_policy.placement.export(Policy)
