// {{name}}: an admission-ordering plugin for wasq.
//
// Describe here what the policy does and how it differs from Kueue's default. As generated, it
// orders workloads as Kueue does: higher priority first, then older first; and a cycle's heads
// in Kueue's classical order.

import { exportOrdering, kueue } from '../sdk-js/index.js';

export class Policy {
  /**
   * The key a workload is queued under; smallest first (BigInt parts). Besides priority and
   * times, a workload says how often it was evicted and queued again (`requeueCount`,
   * `requeueReason`) and who it is: `namespace`, `jobKind` (`'Notebook'`, …), `jobName`,
   * `localQueueName`, `label(key)`, `annotation(key)`; heads say the same.
   * @param {import('../sdk-js/index.js').Catalog} catalog
   * @param {import('../sdk-js/index.js').Workload} workload
   * @param {bigint} now
   */
  sortKey(catalog, workload, now) {
    return { primary: -workload.priority, secondary: workload.created, tertiary: 0n };
  }

  /**
   * The order in which this cycle's heads are tried: their positions (or the heads), each
   * once. Kueue's: second passes first, then lower borrowing level, higher priority, older.
   * To read quota usage here (fair sharing), add `needs(catalog) { return { treeUsage: true,
   * identity: true, podSets: true }; }` and use the fourth argument, a `QuotaView`.
   * @param {import('../sdk-js/index.js').Catalog} catalog
   * @param {import('../sdk-js/index.js').Head[]} heads
   */
  orderHeads(catalog, heads) {
    return kueue.orderHeads(heads);
  }
}

export const ordering = exportOrdering(new Policy());
