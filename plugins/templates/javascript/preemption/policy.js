// {{name}}: a preemption plugin for wasq.
//
// Describe here what the policy does and how it differs from Kueue's default. As generated, it
// never chooses a victim in a protected namespace (the `protect-namespace-js` plugin of wasq's
// repository): Kueue's victim selection — classical, or fair sharing's when it is on — over the
// candidates whose Workload is not in one of the namespaces listed in the plugin's setting
// `namespaces` (`pluginSettings.{{name}}.namespaces: "prod,payments"` in the wasq `--config`
// file; comma-separated; default `prod`). When the preemptor cannot fit without a protected
// victim, it waits.
//
// `kueueAmong(candidates)` asks the host to run Kueue's own selection among those candidates;
// `victims(candidates, allowBorrowing)` names victims yourself (check the fit with
// `request.quotaView()`), and `noVictims` lets the preemptor wait. Every candidate says who it
// is — `namespace`, `jobKind`, `jobApiVersion`, `jobName`, `localQueueName`, `label(key)`,
// `annotation(key)` — besides its `priority`, `created`, `admitted`, `usage`, `kind`,
// `requeueCount` and `index` (its position, which answers name).

import { exportPreemption, kueue, kueueAmong } from '../sdk-js/index.js';

export class Policy {
  /** @type {string[]} The protected namespaces. */
  protected = [];

  /**
   * Called after each new catalog: read settings here.
   * @param {import('../sdk-js/index.js').Catalog} catalog
   */
  catalogChanged(catalog) {
    this.protected = catalog.settingList('namespaces', 'prod');
  }

  /**
   * What the policy reads beyond its requests: Kueue's needs, and who the candidates are.
   * @param {import('../sdk-js/index.js').Catalog} catalog
   */
  needs(catalog) {
    return { ...kueue.preemptionNeeds(catalog), identity: true };
  }

  /**
   * @param {import('../sdk-js/index.js').Catalog} catalog
   * @param {import('../sdk-js/index.js').PreemptionRequest} request
   */
  selectVictims(catalog, request) {
    return kueueAmong(request.candidates.filter((c) => !this.protected.includes(c.namespace)));
  }
}

export const preemption = exportPreemption(new Policy());
