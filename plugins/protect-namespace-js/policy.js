// Preemption that never chooses a victim in a protected namespace: the JavaScript port of
// `plugins/protect-namespace`, deciding identically.
//
// Kueue's victim selection — classical, or fair sharing's when it is on — over the candidates
// whose Workload is not in one of the namespaces listed in the plugin's setting `namespaces`
// (`pluginSettings.protect-namespace-js.namespaces: "prod,payments"` in the wasq `--config`
// file; comma-separated; default `prod`). The host runs Kueue's selection (the `kueue-among`
// answer); when the preemptor cannot fit without a protected victim, it waits, as it would if
// those workloads were not preemptible.

import { exportPreemption, kueue, kueueAmong } from '../sdk-js/index.js';

/** The setting listing the protected namespaces, and its default. */
export const SETTING = 'namespaces';
export const DEFAULT_NAMESPACES = 'prod';

export class ProtectNamespace {
  /** @type {string[]} */
  protected = [];

  /** @param {import('../sdk-js/index.js').Catalog} catalog */
  catalogChanged(catalog) {
    this.protected = catalog.settingList(SETTING, DEFAULT_NAMESPACES);
  }

  /**
   * Kueue's needs, and who the candidates are (their namespaces).
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

export const preemption = exportPreemption(new ProtectNamespace());
