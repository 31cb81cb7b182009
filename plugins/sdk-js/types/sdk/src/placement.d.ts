import { Workload } from './identity.js';
export type Catalog = import('./catalog.js').Catalog;
export type RawRequest = import('wasq:policy/placement@1.1.0').Request;
export type Constraint = import('wasq:policy/placement@1.1.0').Constraint;
export type Domain = import('wasq:policy/placement@1.1.0').Domain;
export type Leaf = import('wasq:policy/placement@1.1.0').Leaf;
export type LeafPods = {
    leaf: number;
    count: number;
};
export type Placement = {
    pods: LeafPods[];
    leader: number | undefined;
};
export type Answer = {
    tag: 'placed';
    val: Placement;
} | {
    tag: 'no-fit';
    val: string;
};
/** @typedef {import('./catalog.js').Catalog} Catalog */
/** @typedef {import('wasq:policy/placement@1.1.0').Request} RawRequest */
/** @typedef {import('wasq:policy/placement@1.1.0').Constraint} Constraint */
/** @typedef {import('wasq:policy/placement@1.1.0').Domain} Domain */
/** @typedef {import('wasq:policy/placement@1.1.0').Leaf} Leaf */
/**
 * Pods on one leaf: `leaf` indexes `request.leaves`; `count` ≥ 1.
 * @typedef {{ leaf: number, count: number }} LeafPods
 */
/**
 * Where the pods (and the leader) go: pods per leaf summing to `request.count`, each leaf at
 * most once; `leader` (a leaf index) exactly when `request.leader` is sent.
 * @typedef {{ pods: LeafPods[], leader: number | undefined }} Placement
 */
/**
 * An answer to one placement request, as the WIT `answer` variant crosses.
 * @typedef {{ tag: 'placed', val: Placement } | { tag: 'no-fit', val: string }} Answer
 */
/** The most pods a leaf reports when the pods request nothing of it (the host's `i32::MAX`). */
export declare const UNLIMITED_PODS = 2147483647;
/**
 * Places the pods: pods per leaf and, with a podSet group's leader, the leader's leaf.
 * @param {Iterable<LeafPods>} pods
 * @param {number} [leader]
 * @returns {Answer}
 */
export declare function placed(pods: Iterable<LeafPods>, leader?: number): Answer;
/**
 * The podSet does not fit: `message` becomes the workload's pending message (the host
 * prefixes the podSet and appends its count of excluded nodes).
 * @param {string} message
 * @returns {Answer}
 */
export declare function noFit(message: string): Answer;
/**
 * One TAS podSet to place (`placement.request`), its names resolved.
 */
export declare class Request {
    #private;
    /** @type {Workload} The workload the podSet belongs to (identity and podSets always sent). */ workload: Workload;
    /** @type {number} The podSet: an index into `workload.podSets`. */ podSet: number;
    /** @type {number} The TAS ResourceFlavor assigned to the podSet. */ flavor: number;
    /** @type {string} The flavor's Topology's name. */ topology: string;
    /** @type {string[]} The Topology's level labels, highest first (…, `kubernetes.io/hostname`). */ levelNames: string[];
    /** @type {string[]} The capacity columns' resource names, `pods` first. */ resourceNames: string[];
    /** @type {number} Pods to place. */ count: number;
    /** @type {bigint[]} One pod's request per resource column, in milli-units (`pods` is 1000). */ perPod: bigint[];
    /** @type {bigint[] | undefined} A podSet group's leader: its one pod's request per column. */ leader: bigint[] | undefined;
    /** @type {Constraint} What the podSet's topology request asks (levels index `levelNames`). */ constraint: Constraint;
    /**
     * @type {Array<{ level: number, parent: number | undefined, free: bigint[] }>} The flavor's
     * domain tree, depth first in the order of label values: each domain's level, parent and free
     * capacity per resource column.
     */
    domains: Array<{
        level: number;
        parent: number | undefined;
        free: bigint[];
    }>;
    /** @type {Leaf[]} Its leaves; answers name leaves by their index here. */ leaves: Leaf[];
    /** @type {bigint} The scheduler's clock at this decision (ms). */ now: bigint;
    /** @type {RawRequest} The request as the host sent it. */ raw: RawRequest;
    /**
     * @param {Catalog} catalog
     * @param {RawRequest} raw
     */
    constructor(catalog: Catalog, raw: RawRequest);
    /** The domain tree, read (built on first use). */
    get tree(): Tree;
}
/**
 * A request's domain tree, with what its lists leave implicit: each domain's children and
 * leaf, each level's domains, how many pods fit where — and `fill`, a placement of any count
 * that fits in given domains.
 */
export declare class Tree {
    #private;
    /** @param {Request} request */
    constructor(request: Request);
    /** The request this view reads. */
    get request(): Request;
    /** How many levels the topology has (0 = the highest). */
    get levels(): number;
    /** The lowest level: the leaves'. */
    get lowest(): number;
    /** How many domains the tree has. */
    get size(): number;
    /**
     * A domain's level.
     * @param {number} d
     */
    level(d: number): number;
    /**
     * A domain's parent; `undefined` at the highest level.
     * @param {number} d
     * @returns {number | undefined}
     */
    parent(d: number): number | undefined;
    /**
     * A domain's children, in the order of their values.
     * @param {number} d
     * @returns {readonly number[]}
     */
    children(d: number): readonly number[];
    /**
     * The domains of a level, in the order of their values.
     * @param {number} level
     * @returns {readonly number[]}
     */
    atLevel(level: number): readonly number[];
    /**
     * The ancestor of `d` at `level` (`d` itself at its own level or above).
     * @param {number} d
     * @param {number} level
     */
    ancestorAt(d: number, level: number): number;
    /**
     * A domain's free capacity of a resource column (milli-units): a leaf's own, an inner
     * domain's the sum of its leaves'.
     * @param {number} column an index into `request.resourceNames`
     * @param {number} d
     * @returns {bigint}
     */
    free(column: number, d: number): bigint;
    /**
     * The column of a resource, by name (`pods`, `cpu`, `nvidia.com/gpu`, …).
     * @param {string} name
     * @returns {number | undefined}
     */
    column(name: string): number | undefined;
    /** How many leaves the tree has. */
    get leafCount(): number;
    /**
     * A leaf's domain.
     * @param {number} leaf
     */
    leafDomain(leaf: number): number;
    /**
     * The leaf a lowest-level domain is.
     * @param {number} d
     * @returns {number | undefined}
     */
    leafOf(d: number): number | undefined;
    /**
     * Whether the pods may run on a leaf.
     * @param {number} leaf
     */
    eligible(leaf: number): boolean;
    /**
     * How many pods fit on a leaf's free capacity (eligibility aside), and the column that
     * limits it first.
     * @param {number} leaf
     */
    fitsOn(leaf: number): {
        pods: number;
        limitedBy: number | undefined;
    };
    /**
     * With a podSet group's leader: `undefined` when the leader does not fit on the leaf, else
     * how many pods fit next to it. `undefined` without a leader.
     * @param {number} leaf
     * @returns {number | undefined}
     */
    fitsWithLeader(leaf: number): number | undefined;
    /**
     * The pods that fit on a domain's eligible leaves, each leaf on its own.
     * @param {number} d
     * @returns {number}
     */
    podsFitting(d: number): number;
    /**
     * The pods a domain can hold in an answer the host accepts: on its eligible leaves, and a
     * multiple of the slice size within each slice domain (and of each further slice layer's size
     * within its domains). The leader is not counted (see `fill`).
     * @param {number} d
     * @returns {number}
     */
    capacity(d: number): number;
    /**
     * A placement of `count` pods in the given domains (one, or several: they are filled in the
     * order given), and of the request's leader when it has one, that the host accepts: pods only
     * on eligible leaves within their free capacity, slices and slice layers whole, the leader on
     * a leaf with room for it next to the pods there, inside the given domains. Each domain's
     * leaves are filled in index order, each to its capacity. `undefined` when they cannot hold
     * it all. (It does not enforce the request's constraint level: choose the domains for it.)
     * @param {number | readonly number[]} domains
     * @param {number} [count] the request's count by default
     * @returns {Placement | undefined}
     */
    fill(domains: number | readonly number[], count?: number): Placement | undefined;
}
export type PlacementPolicy = {
    /**
     * called after each new catalog:
     * the place to read settings.
     */
    catalogChanged?: (catalog: Catalog) => void;
    /**
     * `placed(pods, leader)` or
     * `noFit(message)`.
     */
    place: (catalog: Catalog, request: Request) => Answer;
};
/**
 * A placement policy: what `exportPlacement` takes.
 * @typedef {object} PlacementPolicy
 * @property {(catalog: Catalog) => void} [catalogChanged] called after each new catalog:
 *   the place to read settings.
 * @property {(catalog: Catalog, request: Request) => Answer} place `placed(pods, leader)` or
 *   `noFit(message)`.
 */
/**
 * The WIT interface `wasq:policy/placement` of a policy: export it from the plugin's entry
 * module as `export const placement = exportPlacement(new MyPolicy())`. An exception is logged
 * at error level through the host, then thrown again (the host falls back to its built-in
 * placement for that call).
 * @param {PlacementPolicy} policy
 */
export declare function exportPlacement(policy: PlacementPolicy): {
    /** @param {import('wasq:policy/types@1.1.0').Catalog} catalog */
    setCatalog(catalog: import('wasq:policy/types@1.1.0').Catalog): void;
    /**
     * @param {import('wasq:policy/types@1.1.0').NewStrings | undefined} strings
     * @param {RawRequest[]} requests
     * @returns {Answer[]}
     */
    place(strings: import('wasq:policy/types@1.1.0').NewStrings | undefined, requests: RawRequest[]): Answer[];
};
