import { StringTable } from './strings.js';
export type RawCatalog = import('wasq:policy/types@1.1.0').Catalog;
export type Quota = import('wasq:policy/types@1.1.0').Quota;
export type Node = import('wasq:policy/types@1.1.0').Node;
export type ClusterQueue = import('wasq:policy/types@1.1.0').ClusterQueue;
export type LocalQueue = import('wasq:policy/types@1.1.0').LocalQueue;
export type Annotation = import('wasq:policy/types@1.1.0').Annotation;
export type FairSharingStrategy = import('wasq:policy/types@1.1.0').FairSharingStrategy;
/** @typedef {import('wasq:policy/types@1.1.0').Catalog} RawCatalog */
/** @typedef {import('wasq:policy/types@1.1.0').Quota} Quota */
/** @typedef {import('wasq:policy/types@1.1.0').Node} Node */
/** @typedef {import('wasq:policy/types@1.1.0').ClusterQueue} ClusterQueue */
/** @typedef {import('wasq:policy/types@1.1.0').LocalQueue} LocalQueue */
/** @typedef {import('wasq:policy/types@1.1.0').Annotation} Annotation */
/** @typedef {import('wasq:policy/types@1.1.0').FairSharingStrategy} FairSharingStrategy */
/**
 * The host's catalog with the lookups plugins need. Every field of the WIT record is a
 * property (`catalog.nodes`, `catalog.clusterQueues`, `catalog.settings`, …, as jco maps them:
 * camelCase, `u64`/`s64` as BigInt, absent options `undefined`); the raw record is `raw`.
 *
 * The SDK stores the latest catalog the host sent and passes it to every policy method; ids in
 * requests (`fr-id`, `node-id`, `cluster-queue-id`, …) index its lists. It also resolves the
 * instance's string table (`catalog.string(id)`), which outlives catalogs.
 */
export declare class Catalog {
    #private;
    /** @type {RawCatalog} */ raw: RawCatalog;
    /** @type {bigint} */ generation: bigint;
    /** @type {string[]} Resource names; `resource-id` indexes them. */ resources: string[];
    /** @type {import('wasq:policy/types@1.1.0').Flavor[]} ResourceFlavors; `flavor-id` indexes them. */ flavors: import('wasq:policy/types@1.1.0').Flavor[];
    /** @type {import('wasq:policy/types@1.1.0').FlavorResource[]} Flavor-resource pairs; `fr-id` indexes them. */ flavorResources: import('wasq:policy/types@1.1.0').FlavorResource[];
    /** @type {Node[]} The quota tree; `node-id` indexes it. */ nodes: Node[];
    /** @type {ClusterQueue[]} `cluster-queue-id` indexes them. */ clusterQueues: ClusterQueue[];
    /** @type {LocalQueue[]} `local-queue-id` indexes them. */ localQueues: LocalQueue[];
    /** @type {string[]} Exposed annotation keys; `annotation-key` indexes them. */ annotationKeys: string[];
    /** @type {import('wasq:policy/types@1.1.0').Setting[]} This plugin's settings, as written. */ settings: import('wasq:policy/types@1.1.0').Setting[];
    /** @type {import('wasq:policy/types@1.1.0').FairSharing | undefined} */ fairSharing: import('wasq:policy/types@1.1.0').FairSharing | undefined;
    /** @type {import('wasq:policy/types@1.1.0').AdmissionFairSharing | undefined} */ admissionFairSharing: import('wasq:policy/types@1.1.0').AdmissionFairSharing | undefined;
    /**
     * Wraps a catalog as the host sent it.
     * @param {RawCatalog} raw
     * @param {StringTable} [strings] the instance's string table (a new, empty one by default)
     */
    constructor(raw: RawCatalog, strings?: StringTable);
    /**
     * The catalog before the host sent one: generation 0, everything empty.
     * @param {StringTable} [strings]
     * @returns {Catalog}
     */
    static empty(strings?: StringTable): Catalog;
    /** The instance's string table (`new-strings`), shared with the views of every request. */
    get strings(): StringTable;
    /**
     * A string of the instance's string table; `''` for an id the host never sent.
     * @param {number} id
     * @returns {string}
     */
    string(id: number): string;
    /**
     * The value of this plugin's setting `key` (`pluginSettings.<plugin>.<key>` in the wasq
     * configuration), as written; `undefined` when it is not configured.
     * @param {string} key
     * @returns {string | undefined}
     */
    setting(key: string): string | undefined;
    /**
     * A comma-separated setting as a list: items trimmed, blanks dropped. `fallback` (also a
     * comma-separated string) applies only when the setting is absent: an empty setting is an
     * empty list.
     * @param {string} key
     * @param {string} [fallback]
     * @returns {string[]}
     */
    settingList(key: string, fallback?: string): string[];
    /**
     * The index of an exposed annotation key, by name.
     * @param {string} name
     * @returns {number | undefined}
     */
    annotationKey(name: string): number | undefined;
    /**
     * The value of the annotation `name` in a list the host sent (of a flavor, ClusterQueue or
     * Cohort): `catalog.annotation(catalog.flavors[f].annotations, 'wasq.dev/cost')`;
     * `undefined` when absent or not exposed.
     * @param {readonly Annotation[]} annotations
     * @param {string} name
     * @returns {string | undefined}
     */
    annotation(annotations: readonly Annotation[], name: string): string | undefined;
    /**
     * A node of the quota tree (`undefined` for an unknown id).
     * @param {number} id
     * @returns {Node | undefined}
     */
    node(id: number): Node | undefined;
    /**
     * The parent Cohort of a node (`undefined` for a root or an unknown node).
     * @param {number} id
     * @returns {number | undefined}
     */
    parent(id: number): number | undefined;
    /**
     * The ancestors of a node, from its parent up to its root. Stops after as many steps as there
     * are nodes, so a malformed catalog with a cycle cannot loop forever.
     * @param {number} id
     * @returns {number[]}
     */
    ancestors(id: number): number[];
    /**
     * The root of a node's tree (the node itself when it has no parent).
     * @param {number} id
     * @returns {number}
     */
    root(id: number): number;
    /**
     * The children of a Cohort, in increasing id (empty for a ClusterQueue or an unknown node).
     * @param {number} id
     * @returns {readonly number[]}
     */
    children(id: number): readonly number[];
    /**
     * Whether a node is a Cohort (`false` for a ClusterQueue or an unknown node).
     * @param {number} id
     */
    isCohort(id: number): boolean;
    /**
     * The quota a node has for a flavor-resource: all figures 0 and no limits when the node does
     * not list it (or does not exist).
     * @param {number} node
     * @param {number} fr
     * @returns {Quota}
     */
    quota(node: number, fr: number): Quota;
    /**
     * Kueue's `potentialAvailable`: the most a node could ever hold of `fr`, ignoring usage (its
     * guaranteed quota plus what its parent could hold, capped by its borrowing limit; a root's
     * subtree quota).
     * @param {number} node
     * @param {number} fr
     * @returns {bigint}
     */
    potentialAvailable(node: number, fr: number): bigint;
    /**
     * A ClusterQueue (`undefined` for an unknown id).
     * @param {number} id
     * @returns {ClusterQueue | undefined}
     */
    clusterQueue(id: number): ClusterQueue | undefined;
    /**
     * The id of the ClusterQueue named `name`.
     * @param {string} name
     * @returns {number | undefined}
     */
    clusterQueueId(name: string): number | undefined;
    /**
     * The quota-tree node of a ClusterQueue.
     * @param {number} id
     * @returns {number | undefined}
     */
    clusterQueueNode(id: number): number | undefined;
    /**
     * The ClusterQueue whose quota-tree node `node` is (`undefined` for a Cohort).
     * @param {number} node
     * @returns {number | undefined}
     */
    clusterQueueOfNode(node: number): number | undefined;
    /**
     * A LocalQueue (`undefined` for an unknown id).
     * @param {number} id
     * @returns {LocalQueue | undefined}
     */
    localQueue(id: number): LocalQueue | undefined;
    /**
     * The flavor-resource of a flavor and a resource, by name.
     * @param {string} flavor
     * @param {string} resource
     * @returns {number | undefined}
     */
    flavorResourceId(flavor: string, resource: string): number | undefined;
    /** Whether Kueue's fair sharing is on (`catalog.fairSharing` is present). */
    get fairSharingEnabled(): boolean;
    /**
     * Whether a ClusterQueue orders its queue by admission fair sharing: admission fair sharing
     * is configured and the ClusterQueue's `admissionFairSharing` flag is set.
     * @param {number} cq
     */
    usesAdmissionFairSharing(cq: number): boolean;
}
/**
 * A comma-separated list: items trimmed, blanks dropped.
 * @param {string} text
 * @returns {string[]}
 */
export declare function splitList(text: string): string[];
/**
 * Parses a duration the way Kubernetes and Go write them into milliseconds: one or more
 * `<integer><unit>` parts with units `ms`, `s`, `m`, `h`, `d`, summed (`'1h30m'` →
 * `5400000n`); `'0'` alone is zero. Surrounding blanks are ignored; signs and fractions are not
 * accepted. Throws a `RangeError` naming what is wrong.
 * @param {string} text
 * @returns {bigint}
 */
export declare function parseDuration(text: string): bigint;
