// {{name}}: a flavor-assignment plugin for wasq.
//
// Describe here what the policy does and how it differs from Kueue's default. As generated, it
// takes the last flavor (in the ClusterQueue's order) that fits without preemption, and
// Kueue's choice when none does.
//
// Answering `undefined` assigns no flavor this cycle (the workload waits): it is not Kueue's
// choice, which is `kueue.chooseFlavor(request.options, kueue.fungibilityOf(catalog, cq))`.

import { exportFlavorAssignment, kueue } from '../sdk-js/index.js';

export class Policy {
  /**
   * The index of the chosen entry of `request.options` (each `{ flavor, mode, borrowLevel }`,
   * or `undefined` where the flavor cannot host the podSet), or `undefined` for none.
   * @param {import('../sdk-js/index.js').Catalog} catalog
   * @param {import('../sdk-js/index.js').FlavorAssignmentRequest} request
   */
  chooseFlavor(catalog, request) {
    const fitting = request.options.findLastIndex((o) => o?.mode === 'fit');
    if (fitting >= 0) return fitting;
    return kueue.chooseFlavor(request.options, kueue.fungibilityOf(catalog, request.workload.clusterQueue));
  }
}

export const flavorAssignment = exportFlavorAssignment(new Policy());
