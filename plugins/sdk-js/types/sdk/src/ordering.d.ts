import { Identified, Workload } from './identity.js';
import { QuotaView } from './quota.js';
export type Catalog = import('./catalog.js').Catalog;
export type SortKey = import('./kueue.js').SortKey;
export type FrAmount = import('wasq:policy/types@1.1.0').FrAmount;
export type Needs = import('wasq:policy/types@1.1.0').Needs;
export type HeadInfo = import('wasq:policy/ordering@1.1.0').HeadInfo;
export type NewHeads = import('wasq:policy/ordering@1.1.0').NewHeads;
export type HeadGroup = import('wasq:policy/ordering@1.1.0').HeadGroup;
export type HeadUsage = import('wasq:policy/ordering@1.1.0').HeadUsage;
/**
 * The instance's table of heads (`new-heads`): head `first + k` is `heads[k]`; `first == 0`
 * starts a new table. A `first` past the end leaves heads never received between (they read
 * as the empty head); one inside the table replaces the heads from `first` on; the host does
 * neither.
 */
export declare class HeadTable {
    #private;
    /** How many heads the table holds. */
    get size(): number;
    /** @param {NewHeads | undefined} added */
    add(added: NewHeads | undefined): void;
    /**
     * Head `id`, or the empty head when the table does not hold it.
     * @param {number} id
     * @returns {HeadInfo}
     */
    get(id: number): HeadInfo;
}
/**
 * One ClusterQueue head of a scheduling cycle, after the host assigned it flavors: its entry in
 * the table of heads joined with its group and its usage.
 */
export declare class Head extends Identified {
    /** @type {number} Its position in this cycle's `heads`: what `orderHeads` answers. */ index: number;
    /** @type {number} The workload's handle. */ workload: number;
    /** @type {number} The ClusterQueue whose head it is. */ clusterQueue: number;
    /** @type {bigint} Effective priority. */ priority: bigint;
    /** @type {bigint} Creation time (ms). */ created: bigint;
    /** @type {bigint} When it last entered its queue (ms). */ queued: bigint;
    /**
     * @type {SortKey} The key it was queued under, as its ClusterQueue's ordering binding computed
     * it (this policy's `sortKey`, unless another binding or the built-in key decided).
     */
    key: SortKey;
    /** @type {number} How often it was evicted and queued again (0 = never). */ requeueCount: number;
    /** @type {import('wasq:policy/types@1.1.0').RequeueReason | undefined} */ requeueReason: import('wasq:policy/types@1.1.0').RequeueReason | undefined;
    /**
     * @type {boolean} It already holds quota and this is its second pass (Kueue's two-phase
     * admission); Kueue tries these first.
     */
    secondPass: boolean;
    /** @type {number} How high its assignment borrows: 0 = within nominal quota, 1 = from its cohort, … */ borrowingLevel: number;
    /** @type {FrAmount[]} What its assignment takes; empty unless the policy needs `treeUsage`. */ usage: FrAmount[];
    /**
     * @param {Catalog} catalog
     * @param {number} index
     * @param {HeadInfo} info
     * @param {HeadGroup | undefined} group
     * @param {readonly FrAmount[] | undefined} usage
     */
    constructor(catalog: Catalog, index: number, info: HeadInfo, group: HeadGroup | undefined, usage: readonly FrAmount[] | undefined);
}
export type OrderingPolicy = {
    /**
     * called after each new catalog
     * (before the next decision): the place to read settings.
     */
    catalogChanged?: (catalog: Catalog) => void;
    /**
     * what the policy reads beyond workloads and
     * heads, asked after each new catalog: `localQueueUsage` (fills `workload.localQueueUsage`
     * in `sortKey`), `treeUsage` (the `usage` of `orderHeads` and each head's `usage`; the order
     * is then speculative), `identity`, `podSets`. Default `{ identity: true, podSets: true }`.
     */
    needs?: (catalog: Catalog) => Needs;
    /**
     * the key
     * a workload is queued under, smallest first (BigInt parts). Default: Kueue's
     * `(-priority, created, 0)` (`kueue.sortKey`).
     */
    sortKey?: (catalog: Catalog, workload: Workload, now: bigint) => SortKey;
    /**
     * the order in which this cycle's heads are tried: every head's position (or the head itself)
     * exactly once. `usage` is the quota usage of the heads' cohort trees on every
     * flavor-resource (all 0 unless the policy needs `treeUsage`). Default: Kueue's classical
     * order (`kueue.orderHeads`).
     */
    orderHeads?: (catalog: Catalog, heads: Head[], now: bigint, usage: QuotaView) => Array<number | Head>;
};
/**
 * The WIT interface `wasq:policy/ordering` of a policy: export it from the plugin's entry
 * module as `export const ordering = exportOrdering(new MyPolicy())`. Every call keeps the
 * instance's tables (strings, heads) before the policy runs, and an exception is logged at
 * error level through the host, then thrown again (the host falls back to its built-in policy
 * for that call).
 * @param {OrderingPolicy} policy
 */
export declare function exportOrdering(policy: OrderingPolicy): {
    /**
     * @param {import('wasq:policy/types@1.1.0').Catalog} catalog
     * @returns {Required<Needs>}
     */
    setCatalog(catalog: import('wasq:policy/types@1.1.0').Catalog): Required<Needs>;
    /**
     * @param {import('wasq:policy/types@1.1.0').NewStrings | undefined} strings
     * @param {import('wasq:policy/types@1.1.0').Workload[]} workloads
     * @param {import('wasq:policy/types@1.1.0').LocalQueueUsage[]} localQueueUsage
     * @param {bigint} now
     * @returns {SortKey[]}
     */
    sortKeys(strings: import('wasq:policy/types@1.1.0').NewStrings | undefined, workloads: import('wasq:policy/types@1.1.0').Workload[], localQueueUsage: import('wasq:policy/types@1.1.0').LocalQueueUsage[], now: bigint): SortKey[];
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
    orderHeads(strings: import('wasq:policy/types@1.1.0').NewStrings | undefined, newHeads: NewHeads | undefined, heads: ArrayLike<number>, groups: HeadGroup[], headUsage: HeadUsage[] | undefined, treeUsage: import('wasq:policy/types@1.1.0').NodeUsage[] | undefined, now: bigint): number[];
};
