export type Catalog = import('./catalog.js').Catalog;
export type NodeUsage = import('wasq:policy/types@1.1.0').NodeUsage;
export type FrAmount = import('wasq:policy/types@1.1.0').FrAmount;
/** @typedef {import('./catalog.js').Catalog} Catalog */
/** @typedef {import('wasq:policy/types@1.1.0').NodeUsage} NodeUsage */
/** @typedef {import('wasq:policy/types@1.1.0').FrAmount} FrAmount */
/**
 * The usage a preemption instance received, by node and flavor-resource of its catalog: every
 * request's `usage` is filed here as it arrives (before the policy sees the request) when the
 * request says `usageKept`, and kept until the next catalog.
 */
export declare class KeptUsage {
    #private;
    /** @param {Catalog} catalog */
    constructor(catalog: Catalog);
    /**
     * Files a request's `usage`: each entry is its node's whole usage of the request's
     * flavor-resources (`requests`; one the entry does not list is 0), replacing what was kept
     * for them; other flavor-resources and nodes keep theirs. Unknown nodes and flavor-resources
     * are skipped.
     * @param {readonly NodeUsage[]} usage
     * @param {readonly FrAmount[]} requests
     */
    receive(usage: readonly NodeUsage[], requests: readonly FrAmount[]): void;
    /**
     * A node's usage of `fr` as received last; 0 when none was.
     * @param {number} node
     * @param {number} fr
     * @returns {bigint}
     */
    get(node: number, fr: number): bigint;
}
/**
 * Usage by node and flavor-resource from a list of node entries: a later entry of a node
 * replaces an earlier one; a flavor-resource an entry does not list is 0.
 * @param {readonly NodeUsage[]} usage
 * @returns {(node: number, fr: number) => bigint}
 */
export declare function usageFromList(usage: readonly NodeUsage[]): (node: number, fr: number) => bigint;
/**
 * Quota usage of the quota tree, with Kueue's arithmetic.
 *
 * A view tracks a set of flavor-resources (for a preemption request, the preemptor's
 * `requests`; for a `tree-usage`, all of them) and reads every node's usage from where it was
 * made (a request's usage with what the instance kept, a `tree-usage`, or nothing). Usage of
 * an untracked flavor-resource reads as 0 and changes to it are ignored. Changes made through
 * the view (`addUsage`, `removeCandidate`, …) stay in the view: make a new one, or `clone()`,
 * to start again.
 */
export declare class QuotaView {
    #private;
    /**
     * @param {Catalog} catalog
     * @param {Iterable<number> | undefined} frs the flavor-resources tracked (`undefined`: all)
     * @param {(node: number, fr: number) => bigint} [source] usage before any change (0 by default)
     */
    constructor(catalog: Catalog, frs: Iterable<number> | undefined, source?: (node: number, fr: number) => bigint);
    /**
     * The view of a `tree-usage` (the usage of whole cohort trees): every flavor-resource is
     * tracked; nodes not listed read as 0.
     * @param {Catalog} catalog
     * @param {readonly NodeUsage[]} usage
     */
    static fromUsageTable(catalog: Catalog, usage: readonly NodeUsage[]): QuotaView;
    /** The catalog the view reads quotas from. */
    get catalog(): import("./catalog.js").Catalog;
    /**
     * The tracked flavor-resources (`undefined`: every flavor-resource of the catalog).
     * @returns {number[] | undefined}
     */
    get flavorResources(): number[] | undefined;
    /** A copy with the same usage, to change independently. */
    clone(): QuotaView;
    /**
     * A node's usage of `fr` (for a Cohort: what its children use beyond their guaranteed quota);
     * 0 for an untracked flavor-resource.
     * @param {number} node
     * @param {number} fr
     * @returns {bigint}
     */
    usage(node: number, fr: number): bigint;
    /**
     * Sets a node's usage of `fr` as is, without bubbling to its parent. Ignored for an
     * untracked flavor-resource or an unknown node.
     * @param {number} node
     * @param {number} fr
     * @param {bigint} value
     */
    setUsage(node: number, fr: number, value: bigint): void;
    /**
     * The quota figures of a node for `fr` (all zero and unlimited when it lists none).
     * @param {number} node
     * @param {number} fr
     */
    quota(node: number, fr: number): import("wasq:policy/types@1.1.0").Quota;
    /**
     * Capacity left in the node's guaranteed quota (the part never lent out): ≥ 0.
     * @param {number} node
     * @param {number} fr
     */
    localAvailable(node: number, fr: number): bigint;
    /**
     * What the node could still take of `fr`, borrowing as far as its limits and its ancestors
     * allow: ≥ 0.
     * @param {number} node
     * @param {number} fr
     * @returns {bigint}
     */
    available(node: number, fr: number): bigint;
    /**
     * Kueue's `potentialAvailable` (see `Catalog.potentialAvailable`): independent of usage.
     * @param {number} node
     * @param {number} fr
     */
    potentialAvailable(node: number, fr: number): bigint;
    /**
     * Adds `delta` (negative to remove) to the node's usage of `fr`, bubbling up only the part
     * above each node's guaranteed quota. Ignored for an untracked flavor-resource or an unknown
     * node. Exact and order-independent: adding back what was removed, in any order, restores
     * every node's usage.
     * @param {number} node
     * @param {number} fr
     * @param {bigint} delta
     */
    addUsage(node: number, fr: number, delta: bigint): void;
    /**
     * Adds a workload's usage (one entry per flavor-resource) at a node.
     * @param {number} node
     * @param {Iterable<FrAmount>} usage
     */
    addWorkload(node: number, usage: Iterable<FrAmount>): void;
    /**
     * Removes a workload's usage at a node.
     * @param {number} node
     * @param {Iterable<FrAmount>} usage
     */
    removeWorkload(node: number, usage: Iterable<FrAmount>): void;
    /**
     * Removes a preemption candidate's usage from its ClusterQueue (as if it were evicted).
     * @param {{ clusterQueue: number, usage: Iterable<FrAmount> }} candidate
     */
    removeCandidate(candidate: {
        clusterQueue: number;
        usage: Iterable<FrAmount>;
    }): void;
    /**
     * Puts a removed candidate's usage back.
     * @param {{ clusterQueue: number, usage: Iterable<FrAmount> }} candidate
     */
    restoreCandidate(candidate: {
        clusterQueue: number;
        usage: Iterable<FrAmount>;
    }): void;
    /**
     * Whether the node would be over its own quota with `extra` more of `fr`: for a ClusterQueue,
     * past its nominal quota; for a Cohort, past its subtree quota.
     * @param {number} node
     * @param {number} fr
     * @param {bigint} [extra]
     */
    borrowing(node: number, fr: number, extra?: bigint): boolean;
    /**
     * Kueue's `IsWithinNominalInResources`: usage ≤ subtree quota for every listed
     * flavor-resource.
     * @param {number} node
     * @param {Iterable<number>} frs
     */
    withinNominal(node: number, frs: Iterable<number>): boolean;
    /**
     * Kueue's `workloadFits`: every request is within what the node has available and, unless
     * `allowBorrowing`, does not take the node past its nominal quota.
     * @param {number} node
     * @param {Iterable<FrAmount>} requests
     * @param {boolean} allowBorrowing
     */
    fits(node: number, requests: Iterable<FrAmount>, allowBorrowing: boolean): boolean;
}
