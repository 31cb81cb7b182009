import { kueueAmong } from './preemption.js';
export { allAtOnce, incremental } from './dispatch.js';
export type Fungibility = import('wasq:policy/types@1.1.0').Fungibility;
export type PreemptionConfig = import('wasq:policy/types@1.1.0').PreemptionConfig;
export type FlavorOption = import('wasq:policy/flavor-assignment@1.1.0').FlavorOption;
export type FitMode = import('wasq:policy/flavor-assignment@1.1.0').FitMode;
export type Needs = import('wasq:policy/types@1.1.0').Needs;
export type SortKey = {
    primary: bigint;
    secondary: bigint;
    tertiary: bigint;
};
/**
 * Kueue's queue order: higher priority first, then older first — `(-priority, created, 0)`.
 * @param {{ priority: bigint, created: bigint }} workload
 * @returns {SortKey}
 */
export declare function sortKey(workload: {
    priority: bigint;
    created: bigint;
}): SortKey;
/**
 * Kueue's queue order for a given effective priority.
 * @param {bigint} priority
 * @param {bigint} created
 * @returns {SortKey}
 */
export declare function sortKeyWithPriority(priority: bigint, created: bigint): SortKey;
/**
 * Compares two sort keys as the host does (negative: `a` pops first).
 * @param {SortKey} a
 * @param {SortKey} b
 * @returns {number}
 */
export declare function compareSortKeys(a: SortKey, b: SortKey): number;
/**
 * A non-negative float as an `s64` with the same order (the IEEE 754 bit patterns of positive
 * numbers, +∞ included, sort like the numbers); zero of either sign, negative numbers and NaN
 * count as 0.
 * @param {number} value
 * @returns {bigint}
 */
export declare function orderBits(value: number): bigint;
/**
 * A LocalQueue's admission-fair-sharing usage: the host's `weighted` figure when it sent one
 * for `localQueue`; otherwise that of a LocalQueue with nothing consumed (0, or +∞ for a
 * `fairWeight` ≤ 0).
 * @param {import('./catalog.js').Catalog} catalog
 * @param {number} localQueue
 * @param {import('wasq:policy/types@1.1.0').LocalQueueUsage | undefined} usage
 * @returns {number}
 */
export declare function weightedLocalQueueUsage(catalog: import('./catalog.js').Catalog, localQueue: number, usage: import('wasq:policy/types@1.1.0').LocalQueueUsage | undefined): number;
/**
 * Kueue's queue order under admission fair sharing too: for a workload of a ClusterQueue that
 * uses it (`catalog.usesAdmissionFairSharing`) and has a LocalQueue,
 * `(orderBits(LocalQueue usage), -priority, created)`; otherwise `sortKey`. The usage is
 * `workload.localQueueUsage` (declare `localQueueUsage` in `needs`).
 * @param {import('./catalog.js').Catalog} catalog
 * @param {import('./identity.js').Workload} workload
 * @returns {SortKey}
 */
export declare function sortKeyFor(catalog: import('./catalog.js').Catalog, workload: import('./identity.js').Workload): SortKey;
export type HeadFacts = {
    secondPass: boolean;
    borrowingLevel: number;
    priority: bigint;
    created: bigint;
};
/**
 * What `orderHeads` compares of a head.
 * @typedef {object} HeadFacts
 * @property {boolean} secondPass
 * @property {number} borrowingLevel
 * @property {bigint} priority
 * @property {bigint} created
 */
/**
 * Kueue's classical cycle order (without fair sharing): positions of `heads`, sorted stably by
 * second pass first, then lower borrowing level, higher priority, older.
 * @param {readonly HeadFacts[]} heads
 * @returns {number[]}
 */
export declare function orderHeads(heads: readonly HeadFacts[]): number[];
/**
 * Kueue's cycle order with the effective priority of each head given by `priority` (for a
 * policy whose queue order changed priorities: read them back from `head.key`).
 * @template {HeadFacts} H
 * @param {readonly H[]} heads
 * @param {(head: H) => bigint} priority
 * @returns {number[]}
 */
export declare function orderHeadsByPriority<H extends HeadFacts>(heads: readonly H[], priority: (head: H) => bigint): number[];
/**
 * What Kueue's victim selection reads under the catalog's configuration: the quota usage of the
 * preemptor's cohort tree when fair sharing is on. Never who workloads are: a policy that reads
 * identity adds it (`{ ...kueue.preemptionNeeds(catalog), identity: true }`).
 * @param {import('./catalog.js').Catalog} catalog
 * @returns {Needs}
 */
export declare function preemptionNeeds(catalog: import('./catalog.js').Catalog): Needs;
/**
 * Kueue's victims for a request: the host runs Kueue's selection (classical, or fair
 * sharing's when on) over every candidate. Narrow it with `kueueAmong(indices)`.
 * @param {{ candidates: readonly unknown[] }} request
 */
export declare function selectVictims(request: {
    candidates: readonly unknown[];
}): import("./preemption.js").Answer;
export { kueueAmong };
/**
 * Kueue's `isPreferred(a, b)`: whether (mode, borrowing level) `a` is better than `b`.
 * @param {[FitMode, number]} a
 * @param {[FitMode, number]} b
 * @param {Fungibility} fungibility
 */
export declare function isPreferred(a: [FitMode, number], b: [FitMode, number], fungibility: Fungibility): boolean;
/**
 * Kueue's `shouldTryNextFlavor` for a flavor's (mode, borrowing level).
 * @param {[FitMode, number]} mode
 * @param {Fungibility} fungibility
 */
export declare function shouldTryNextFlavor(mode: [FitMode, number], fungibility: Fungibility): boolean;
/**
 * Kueue's flavor choice: scans the options in the ClusterQueue's order, stops at the first one
 * the fungibility rules accept, otherwise takes the most preferred one seen; `undefined` when
 * no option can host the podSet.
 * @param {ReadonlyArray<FlavorOption | undefined>} options
 * @param {Fungibility} fungibility
 * @returns {number | undefined}
 */
export declare function chooseFlavor(options: ReadonlyArray<FlavorOption | undefined>, fungibility: Fungibility): number | undefined;
/**
 * Kueue's defaults for `spec.flavorFungibility`.
 * @returns {Fungibility}
 */
export declare function defaultFungibility(): Fungibility;
/**
 * Kueue's defaults for `spec.preemption`.
 * @returns {PreemptionConfig}
 */
export declare function defaultPreemption(): PreemptionConfig;
/**
 * The fungibility settings of a ClusterQueue; Kueue's defaults when it is unknown.
 * @param {import('./catalog.js').Catalog} catalog
 * @param {number} clusterQueue
 * @returns {Fungibility}
 */
export declare function fungibilityOf(catalog: import('./catalog.js').Catalog, clusterQueue: number): Fungibility;
