// Admission-ordering policies: a class with `sortKey(catalog, workload, now)` and/or
// `orderHeads(catalog, heads, now, usage)` (each defaults to Kueue's classical order), and
// optionally `catalogChanged(catalog)`, `needs(catalog)`; exported with
// `export const ordering = exportOrdering(new MyPolicy())`.
//
// A workload's key is computed once when it is queued; the host keeps its heaps by those keys.
// A cycle's heads cross once into the instance's table of heads (`new-heads`) and are named by
// id afterwards; the SDK joins each with its group (second pass, borrowing level) and, with
// `treeUsage`, its `head-usage`, into one `Head` view.

import { checkIndex, checkPolicy, DEFAULT_NEEDS, normalizeNeeds, PluginState, positionOf, reported } from './export.js';
import { Identified, Workload } from './identity.js';
import * as kueue from './kueue.js';
import { QuotaView } from './quota.js';

/** @typedef {import('./catalog.js').Catalog} Catalog */
/** @typedef {import('./kueue.js').SortKey} SortKey */
/** @typedef {import('wasq:policy/types@1.1.0').FrAmount} FrAmount */
/** @typedef {import('wasq:policy/types@1.1.0').Needs} Needs */
/** @typedef {import('wasq:policy/ordering@1.1.0').HeadInfo} HeadInfo */
/** @typedef {import('wasq:policy/ordering@1.1.0').NewHeads} NewHeads */
/** @typedef {import('wasq:policy/ordering@1.1.0').HeadGroup} HeadGroup */
/** @typedef {import('wasq:policy/ordering@1.1.0').HeadUsage} HeadUsage */

/** What a head the host never sent reads as: workload 0, ClusterQueue 0, nobody. */
const EMPTY_HEAD = Object.freeze(
  /** @type {HeadInfo} */ ({
    workload: 0,
    clusterQueue: 0,
    localQueue: undefined,
    priority: 0n,
    created: 0n,
    queued: 0n,
    key: { primary: 0n, secondary: 0n, tertiary: 0n },
    requeueCount: 0,
    requeueReason: undefined,
    identity: undefined,
  }),
);

/**
 * The instance's table of heads (`new-heads`): head `first + k` is `heads[k]`; `first == 0`
 * starts a new table. A `first` past the end leaves heads never received between (they read
 * as the empty head); one inside the table replaces the heads from `first` on; the host does
 * neither.
 */
export class HeadTable {
  /** @type {HeadInfo[]} */
  #heads = [];

  /** How many heads the table holds. */
  get size() {
    return this.#heads.length;
  }

  /** @param {NewHeads | undefined} added */
  add(added) {
    if (added === undefined || added === null) return;
    const first = added.first >>> 0;
    if (first < this.#heads.length) this.#heads.length = first;
    while (this.#heads.length < first) this.#heads.push(EMPTY_HEAD);
    for (const head of added.heads) this.#heads.push(head);
  }

  /**
   * Head `id`, or the empty head when the table does not hold it.
   * @param {number} id
   * @returns {HeadInfo}
   */
  get(id) {
    return this.#heads[id] ?? EMPTY_HEAD;
  }
}

/**
 * One ClusterQueue head of a scheduling cycle, after the host assigned it flavors: its entry in
 * the table of heads joined with its group and its usage.
 */
export class Head extends Identified {
  /** @type {number} Its position in this cycle's `heads`: what `orderHeads` answers. */ index;
  /** @type {number} The workload's handle. */ workload;
  /** @type {number} The ClusterQueue whose head it is. */ clusterQueue;
  /** @type {bigint} Effective priority. */ priority;
  /** @type {bigint} Creation time (ms). */ created;
  /** @type {bigint} When it last entered its queue (ms). */ queued;
  /**
   * @type {SortKey} The key it was queued under, as its ClusterQueue's ordering binding computed
   * it (this policy's `sortKey`, unless another binding or the built-in key decided).
   */
  key;
  /** @type {number} How often it was evicted and queued again (0 = never). */ requeueCount;
  /** @type {import('wasq:policy/types@1.1.0').RequeueReason | undefined} */ requeueReason;
  /**
   * @type {boolean} It already holds quota and this is its second pass (Kueue's two-phase
   * admission); Kueue tries these first.
   */
  secondPass;
  /** @type {number} How high its assignment borrows: 0 = within nominal quota, 1 = from its cohort, … */ borrowingLevel;
  /** @type {FrAmount[]} What its assignment takes; empty unless the policy needs `treeUsage`. */ usage;

  /**
   * @param {Catalog} catalog
   * @param {number} index
   * @param {HeadInfo} info
   * @param {HeadGroup | undefined} group
   * @param {readonly FrAmount[] | undefined} usage
   */
  constructor(catalog, index, info, group, usage) {
    super(catalog, info.identity, info.localQueue);
    this.index = index;
    this.workload = info.workload;
    this.clusterQueue = info.clusterQueue;
    this.priority = info.priority;
    this.created = info.created;
    this.queued = info.queued;
    this.key = { primary: info.key.primary, secondary: info.key.secondary, tertiary: info.key.tertiary };
    this.requeueCount = info.requeueCount;
    this.requeueReason = info.requeueReason ?? undefined;
    this.secondPass = group?.secondPass ?? false;
    this.borrowingLevel = group?.borrowingLevel ?? 0;
    this.usage = usage ? Array.from(usage) : [];
  }
}

/**
 * An ordering policy: what `exportOrdering` takes. Every method is optional.
 * @typedef {object} OrderingPolicy
 * @property {(catalog: Catalog) => void} [catalogChanged] called after each new catalog
 *   (before the next decision): the place to read settings.
 * @property {(catalog: Catalog) => Needs} [needs] what the policy reads beyond workloads and
 *   heads, asked after each new catalog: `localQueueUsage` (fills `workload.localQueueUsage`
 *   in `sortKey`), `treeUsage` (the `usage` of `orderHeads` and each head's `usage`; the order
 *   is then speculative), `identity`, `podSets`. Default `{ identity: true, podSets: true }`.
 * @property {(catalog: Catalog, workload: Workload, now: bigint) => SortKey} [sortKey] the key
 *   a workload is queued under, smallest first (BigInt parts). Default: Kueue's
 *   `(-priority, created, 0)` (`kueue.sortKey`).
 * @property {(catalog: Catalog, heads: Head[], now: bigint, usage: QuotaView) => Array<number | Head>} [orderHeads]
 *   the order in which this cycle's heads are tried: every head's position (or the head itself)
 *   exactly once. `usage` is the quota usage of the heads' cohort trees on every
 *   flavor-resource (all 0 unless the policy needs `treeUsage`). Default: Kueue's classical
 *   order (`kueue.orderHeads`).
 */

/**
 * A key the policy answered, checked and as the host takes it (numbers are accepted and made
 * BigInt; each part must fit in an `s64`).
 * @param {unknown} key
 * @returns {SortKey}
 */
function checkKey(key) {
  if (key === null || typeof key !== 'object') throw new TypeError(`sortKey must return { primary, secondary, tertiary }, got ${String(key)}`);
  const k = /** @type {Record<string, unknown>} */ (key);
  /** @param {'primary' | 'secondary' | 'tertiary'} part */
  const part = (part) => {
    const v = k[part];
    if (typeof v === 'bigint' && BigInt.asIntN(64, v) === v) return v;
    if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
    throw new TypeError(`sortKey().${part} must be an s64 (a BigInt, or a safe integer), got ${String(v)}`);
  };
  return { primary: part('primary'), secondary: part('secondary'), tertiary: part('tertiary') };
}

/**
 * The WIT interface `wasq:policy/ordering` of a policy: export it from the plugin's entry
 * module as `export const ordering = exportOrdering(new MyPolicy())`. Every call keeps the
 * instance's tables (strings, heads) before the policy runs, and an exception is logged at
 * error level through the host, then thrown again (the host falls back to its built-in policy
 * for that call).
 * @param {OrderingPolicy} policy
 */
export function exportOrdering(policy) {
  checkPolicy(policy, 'ordering', [], ['catalogChanged', 'needs', 'sortKey', 'orderHeads']);
  const state = new PluginState();
  let table = new HeadTable();
  return {
    /**
     * @param {import('wasq:policy/types@1.1.0').Catalog} catalog
     * @returns {Required<Needs>}
     */
    setCatalog(catalog) {
      return reported('set-catalog', () => {
        // Heads name the previous catalog's queues; the host starts a new table too.
        table = new HeadTable();
        state.setCatalog(catalog);
        policy.catalogChanged?.(state.catalog);
        return normalizeNeeds(policy.needs ? policy.needs(state.catalog) : DEFAULT_NEEDS);
      });
    },
    /**
     * @param {import('wasq:policy/types@1.1.0').NewStrings | undefined} strings
     * @param {import('wasq:policy/types@1.1.0').Workload[]} workloads
     * @param {import('wasq:policy/types@1.1.0').LocalQueueUsage[]} localQueueUsage
     * @param {bigint} now
     * @returns {SortKey[]}
     */
    sortKeys(strings, workloads, localQueueUsage, now) {
      return reported('sort-keys', () => {
        state.strings.add(strings);
        const catalog = state.catalog;
        const usageOf = new Map(Array.from(localQueueUsage, (u) => [u.localQueue, u]));
        return Array.from(workloads, (raw) => {
          const lq = raw.localQueue;
          const workload = new Workload(catalog, raw, lq === undefined || lq === null ? undefined : usageOf.get(lq));
          return checkKey(policy.sortKey ? policy.sortKey(catalog, workload, now) : kueue.sortKey(workload));
        });
      });
    },
    /**
     * @param {import('wasq:policy/types@1.1.0').NewStrings | undefined} strings
     * @param {NewHeads | undefined} newHeads
     * @param {ArrayLike<number>} heads
     * @param {HeadGroup[]} groups
     * @param {HeadUsage[] | undefined} headUsage
     * @param {import('wasq:policy/types@1.1.0').NodeUsage[] | undefined} treeUsage
     * @param {bigint} now
     * @returns {number[]}
     */
    orderHeads(strings, newHeads, heads, groups, headUsage, treeUsage, now) {
      return reported('order-heads', () => {
        state.strings.add(strings);
        table.add(newHeads);
        const catalog = state.catalog;
        /** @type {Map<number, HeadGroup>} */
        const groupOf = new Map();
        for (const g of groups) for (const id of g.heads) groupOf.set(id, g);
        const usageOf = new Map(Array.from(headUsage ?? [], (u) => [u.head, u.usage]));
        const views = Array.from(heads, (id, index) => new Head(catalog, index, table.get(id), groupOf.get(id), usageOf.get(id)));
        const usage = QuotaView.fromUsageTable(catalog, treeUsage ?? []);
        const order = policy.orderHeads ? policy.orderHeads(catalog, views, now, usage) : kueue.orderHeads(views);
        return checkOrder(order, views);
      });
    },
  };
}

/**
 * An order the policy answered, checked (every head exactly once), as the heads' workloads.
 * @param {unknown} order
 * @param {readonly Head[]} heads
 * @returns {number[]}
 */
function checkOrder(order, heads) {
  if (order === null || typeof order !== 'object' || !(Symbol.iterator in order)) {
    throw new TypeError(`orderHeads must return the heads' positions (or the heads), got ${String(order)}`);
  }
  const seen = new Array(heads.length).fill(false);
  const out = [];
  for (const item of /** @type {Iterable<unknown>} */ (order)) {
    const i = checkIndex(positionOf(item), heads.length, `the ${heads.length} heads`);
    if (seen[i]) throw new RangeError(`orderHeads: head ${i} given twice`);
    seen[i] = true;
    out.push(heads[i].workload);
  }
  if (out.length !== heads.length) {
    throw new RangeError(`orderHeads: ${heads.length - out.length} of the ${heads.length} heads missing`);
  }
  return out;
}
