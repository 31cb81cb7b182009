// Admission ordering that sends workloads of some job kinds after the others: the JavaScript
// port of `plugins/demote-notebooks`, deciding identically.
//
// A workload whose owning job's kind is listed in the plugin's setting `kinds`
// (`pluginSettings.demote-notebooks-js.kinds: "Notebook,RayCluster"` in the wasq `--config`
// file; comma-separated; default `Notebook`) is queued after every workload of other kinds in
// its ClusterQueue, and its ClusterQueue head is tried after the heads of other kinds in a
// cycle. Within each group the order is Kueue's classical one: queue key `(-priority,
// created)`; heads by second pass first, then lower borrowing level, higher priority, older.
// Second passes keep their place, as in Kueue. Bare Workloads (no owner) are not demoted.

import { exportOrdering, kueue } from '../sdk-js/index.js';

/** The setting listing the demoted job kinds, and its default. */
export const SETTING = 'kinds';
export const DEFAULT_KINDS = 'Notebook';

export class DemoteNotebooks {
  /** @type {string[]} */
  kinds = [];

  /** @param {import('../sdk-js/index.js').Catalog} catalog */
  catalogChanged(catalog) {
    this.kinds = catalog.settingList(SETTING, DEFAULT_KINDS);
  }

  /**
   * Whether a workload (or head) is of a demoted kind.
   * @param {{ jobKind: string | undefined }} who
   */
  demoted(who) {
    return who.jobKind !== undefined && this.kinds.includes(who.jobKind);
  }

  /**
   * @param {import('../sdk-js/index.js').Catalog} catalog
   * @param {import('../sdk-js/index.js').Workload} workload
   */
  sortKey(catalog, workload) {
    const key = kueue.sortKey(workload);
    return { primary: this.demoted(workload) ? 1n : 0n, secondary: key.primary, tertiary: key.secondary };
  }

  /**
   * @param {import('../sdk-js/index.js').Catalog} catalog
   * @param {import('../sdk-js/index.js').Head[]} heads
   */
  orderHeads(catalog, heads) {
    // Stable: Kueue's order within each group; second passes stay first.
    const rank = (/** @type {number} */ i) => (heads[i].secondPass ? 0 : 2) + (this.demoted(heads[i]) ? 1 : 0);
    return kueue.orderHeads(heads).sort((a, b) => rank(a) - rank(b));
  }
}

export const ordering = exportOrdering(new DemoteNotebooks());
