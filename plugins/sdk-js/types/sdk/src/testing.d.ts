import { exportFlavorAssignment } from './flavor-assignment.js';
import { exportOrdering } from './ordering.js';
import { exportPlacement } from './placement.js';
import { exportPreemption } from './preemption.js';
import { exportDispatch, Request as DispatchRequest } from './dispatch.js';
import * as kueue from './kueue.js';
export type RawCatalog = import('wasq:policy/types@1.1.0').Catalog;
export type Needs = import('wasq:policy/types@1.1.0').Needs;
export type FrAmount = import('wasq:policy/types@1.1.0').FrAmount;
export type NodeUsage = import('wasq:policy/types@1.1.0').NodeUsage;
export type Int = bigint | number;
/**
 * The lines policies logged (outside a component they are kept in memory), oldest first, as
 * `[level, message]`.
 * @returns {Array<[import('wasq:policy/types@1.1.0').Level, string]>}
 */
export declare function logs(): Array<[import('wasq:policy/types@1.1.0').Level, string]>;
/** Forgets the lines logged so far. */
export declare function clearLogs(): void;
/**
 * Builds a catalog (the WIT record `setCatalog` takes) node by node. Nodes get ids in the order
 * they are added; every ClusterQueue node also gets a ClusterQueue (ids in order too) with
 * Kueue's default preemption and fungibility. `build()` derives subtree and guaranteed quotas
 * and heights as the host does.
 */
export declare class CatalogBuilder {
    #private;
    /**
     * Sets the catalog's generation (1 by default).
     * @param {Int} generation
     */
    generation(generation: Int): this;
    /**
     * Adds `n` flavor-resources: flavor `i` (named `f<i>`) with resource `cpu`.
     * @param {number} n
     */
    flavorResources(n: number): this;
    /**
     * Adds a flavor (named `name`, `f<i>` by default) with one flavor-resource per resource name,
     * in order: `resourceFlavors(['cpu', 'nvidia.com/gpu'])` on an empty builder gives
     * flavor-resources 0 = (f0, cpu) and 1 = (f0, nvidia.com/gpu).
     * @param {readonly string[]} resources
     * @param {string} [name]
     */
    resourceFlavors(resources: readonly string[], name?: string): this;
    /**
     * Turns fair sharing on with these preemption strategies.
     * @param {import('wasq:policy/types@1.1.0').FairSharingStrategy[]} [strategies]
     */
    fairSharing(strategies?: import('wasq:policy/types@1.1.0').FairSharingStrategy[]): this;
    /**
     * Turns admission fair sharing on (`resourceWeights` by resource, 1.0 beyond).
     * @param {Int} halfLife
     * @param {Int} samplingInterval
     * @param {readonly number[]} [resourceWeights]
     */
    admissionFairSharing(halfLife: Int, samplingInterval: Int, resourceWeights?: readonly number[]): this;
    /**
     * Sets the last added ClusterQueue's `admissionFairSharing` flag.
     * @param {boolean} on
     */
    queueAdmissionFairSharing(on: boolean): this;
    /**
     * Sets a node's `fairWeight` (milli-units; 1000 by default).
     * @param {number} node
     * @param {Int} weight
     */
    fairWeight(node: number, weight: Int): this;
    /**
     * Adds a LocalQueue `namespace/name` (ids in the order added).
     * @param {string} namespace
     * @param {string} name
     * @param {number | undefined} clusterQueue
     * @param {Int} [fairWeight]
     */
    localQueue(namespace: string, name: string, clusterQueue: number | undefined, fairWeight?: Int): this;
    /**
     * Adds an exposed annotation key (its index is the order of addition).
     * @param {string} key
     */
    annotationKey(key: string): this;
    /**
     * Sets an annotation on a flavor (adding the key if needed).
     * @param {number} flavor
     * @param {string} key
     * @param {string} value
     */
    flavorAnnotation(flavor: number, key: string, value: string): this;
    /**
     * Sets an annotation on a node (adding the key if needed).
     * @param {number} node
     * @param {string} key
     * @param {string} value
     */
    nodeAnnotation(node: number, key: string, value: string): this;
    /**
     * Adds a plugin setting (`pluginSettings.<plugin>.<key>`).
     * @param {string} key
     * @param {string} value
     */
    setting(key: string, value: string): this;
    /**
     * Adds a Cohort node.
     * @param {string} name
     * @param {number} [parent]
     */
    cohort(name: string, parent?: number): this;
    /**
     * Adds a ClusterQueue node and its ClusterQueue.
     * @param {string} name
     * @param {number} [parent]
     */
    clusterQueue(name: string, parent?: number): this;
    /**
     * Declares a node's quota for a flavor-resource.
     * @param {number} node
     * @param {number} fr
     * @param {Int} nominal
     * @param {Int} [borrowingLimit]
     * @param {Int} [lendingLimit]
     */
    quota(node: number, fr: number, nominal: Int, borrowingLimit?: Int, lendingLimit?: Int): this;
    /**
     * Sets the last added ClusterQueue's `spec.preemption` (merged over Kueue's defaults).
     * @param {Partial<import('wasq:policy/types@1.1.0').PreemptionConfig>} config
     */
    preemption(config: Partial<import('wasq:policy/types@1.1.0').PreemptionConfig>): this;
    /**
     * Sets the last added ClusterQueue's `spec.flavorFungibility` (merged over Kueue's defaults).
     * @param {Partial<import('wasq:policy/types@1.1.0').Fungibility>} fungibility
     */
    fungibility(fungibility: Partial<import('wasq:policy/types@1.1.0').Fungibility>): this;
    /**
     * Adds a resource group to the last added ClusterQueue.
     * @param {readonly number[]} covered resource ids
     * @param {readonly number[]} flavors flavor ids, in order
     */
    resourceGroup(covered: readonly number[], flavors: readonly number[]): this;
    /**
     * The catalog, with subtree and guaranteed quotas and heights derived as the host derives
     * them.
     * @returns {RawCatalog}
     */
    build(): RawCatalog;
}
export type Who = {
    /**
     * `default` when not given
     */
    namespace?: string;
    /**
     * the owning job; none: a bare Workload
     */
    owner?: {
        kind: string;
        apiVersion: string;
        name: string;
    };
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
};
export type WorkloadSpec = Who & {
    id: number;
    clusterQueue?: number;
    localQueue?: number;
    priority?: Int;
    created?: Int;
    queued?: Int;
    requeueCount?: number;
    requeueReason?: import('wasq:policy/types@1.1.0').RequeueReason;
    podSets?: Array<{
        count: number;
        minCount?: number;
        perPod?: Array<{
            resource: number;
            amount: Int;
        }>;
    }>;
};
/**
 * Who a workload is, written with strings: what a simulated host interns.
 * @typedef {object} Who
 * @property {string} [namespace] `default` when not given
 * @property {{ kind: string, apiVersion: string, name: string }} [owner] the owning job; none: a bare Workload
 * @property {Record<string, string>} [labels]
 * @property {Record<string, string>} [annotations]
 */
/**
 * A workload as a test writes it (BigInt or safe-integer numbers for priority and times).
 * @typedef {Who & {
 *   id: number,
 *   clusterQueue?: number,
 *   localQueue?: number,
 *   priority?: Int,
 *   created?: Int,
 *   queued?: Int,
 *   requeueCount?: number,
 *   requeueReason?: import('wasq:policy/types@1.1.0').RequeueReason,
 *   podSets?: Array<{ count: number, minCount?: number, perPod?: Array<{ resource: number, amount: Int }> }>,
 * }} WorkloadSpec
 */
/**
 * A workload for a simulated host: of ClusterQueue 0, priority 0, created at 0, queued when
 * created, with one podSet of one pod requesting nothing, unless `spec` says otherwise.
 * @param {WorkloadSpec} spec
 * @returns {WorkloadSpec}
 */
export declare function workload(spec: WorkloadSpec): WorkloadSpec;
export type HeadSpec = Who & {
    workload: number;
    clusterQueue?: number;
    localQueue?: number;
    priority?: Int;
    created?: Int;
    queued?: Int;
    key?: {
        primary: Int;
        secondary: Int;
        tertiary: Int;
    };
    requeueCount?: number;
    requeueReason?: import('wasq:policy/types@1.1.0').RequeueReason;
    secondPass?: boolean;
    borrowingLevel?: number;
    usage?: Array<{
        fr: number;
        amount: Int;
    }>;
};
/**
 * A head of a cycle as a test writes it: a workload, how it was assigned (`secondPass`,
 * `borrowingLevel`), what its assignment takes (`usage`) and the key it was queued under
 * (Kueue's by default).
 * @typedef {Who & {
 *   workload: number,
 *   clusterQueue?: number,
 *   localQueue?: number,
 *   priority?: Int,
 *   created?: Int,
 *   queued?: Int,
 *   key?: { primary: Int, secondary: Int, tertiary: Int },
 *   requeueCount?: number,
 *   requeueReason?: import('wasq:policy/types@1.1.0').RequeueReason,
 *   secondPass?: boolean,
 *   borrowingLevel?: number,
 *   usage?: Array<{ fr: number, amount: Int }>,
 * }} HeadSpec
 */
/**
 * A head for a simulated host: first pass, within nominal quota, queued at creation under
 * Kueue's key, unless `spec` says otherwise.
 * @param {HeadSpec} spec
 * @returns {HeadSpec}
 */
export declare function head(spec: HeadSpec): HeadSpec;
export type CandidateSpec = Who & {
    workload: number;
    clusterQueue?: number;
    localQueue?: number;
    priority?: Int;
    created?: Int;
    admitted?: Int;
    requeueCount?: number;
    requeueReason?: import('wasq:policy/types@1.1.0').RequeueReason;
    usage?: Array<{
        fr: number;
        amount: Int;
    }>;
    kind?: import('wasq:policy/preemption@1.1.0').CandidateKind;
    lca?: number;
    evicting?: boolean;
    localQueueUsage?: number;
};
/**
 * A preemption candidate as a test writes it.
 * @typedef {Who & {
 *   workload: number,
 *   clusterQueue?: number,
 *   localQueue?: number,
 *   priority?: Int,
 *   created?: Int,
 *   admitted?: Int,
 *   requeueCount?: number,
 *   requeueReason?: import('wasq:policy/types@1.1.0').RequeueReason,
 *   usage?: Array<{ fr: number, amount: Int }>,
 *   kind?: import('wasq:policy/preemption@1.1.0').CandidateKind,
 *   lca?: number,
 *   evicting?: boolean,
 *   localQueueUsage?: number,
 * }} CandidateSpec
 */
/**
 * A candidate for a simulated host: of the preemptor's own ClusterQueue (`same-queue`, queue
 * 0), admitted at 0, holding nothing, unless `spec` says otherwise.
 * @param {CandidateSpec} spec
 * @returns {CandidateSpec}
 */
export declare function candidate(spec: CandidateSpec): CandidateSpec;
/**
 * Amounts of flavor-resources from `[fr, amount]` pairs.
 * @param {ReadonlyArray<readonly [number, Int]>} pairs
 * @returns {FrAmount[]}
 */
export declare function amounts(pairs: ReadonlyArray<readonly [number, Int]>): FrAmount[];
/**
 * One node's usage from `[fr, amount]` pairs: an entry of a preemption request's `usage` or of
 * a `tree-usage`.
 * @param {number} node
 * @param {ReadonlyArray<readonly [number, Int]>} pairs
 * @returns {NodeUsage}
 */
export declare function nodeUsage(node: number, pairs: ReadonlyArray<readonly [number, Int]>): NodeUsage;
export type TopologyNode = {
    path: readonly string[];
    free: ReadonlyArray<Int>;
    eligible?: boolean;
};
/**
 * A node of a topology as a test writes it: its value at each level, highest first (its path:
 * `['block-a', 'rack-1', 'node-1']`), its free capacity per resource column (numbers are
 * milli-units, as the host sends them), and whether the pods may use it.
 * @typedef {{ path: readonly string[], free: ReadonlyArray<Int>, eligible?: boolean }} TopologyNode
 */
/**
 * The domain tree the host would send for these nodes: every value of every level becomes a
 * domain, numbered depth first in the order of their values, an inner domain's free capacity
 * the sum of its leaves'; the lowest level's domains are the leaves, in that order.
 * @param {readonly TopologyNode[]} nodes
 * @returns {{ domains: Array<{ level: number, parent: number | undefined, free: bigint[] }>, leaves: Array<{ domain: number, eligible: boolean }>, names: string[][] }}
 *   `names[d]` is domain `d`'s path
 */
export declare function topology(nodes: readonly TopologyNode[]): {
    domains: Array<{
        level: number;
        parent: number | undefined;
        free: bigint[];
    }>;
    leaves: Array<{
        domain: number;
        eligible: boolean;
    }>;
    names: string[][];
};
/**
 * Checks a placement answer as the host does (`src/topology/placement.rs`, `verify`): every
 * pod placed, on eligible leaves within their free capacity, each leaf once, inside one domain
 * of a required level, whole slices per slice domain and per further slice layer's domain, the
 * leader (exactly when requested) on an eligible leaf with room for it next to the pods there.
 * Returns why the host would refuse it, or `undefined` when it accepts it.
 * @param {import('./placement.js').Request} request a request view (e.g. `new PlacementRequest(catalog, raw)`)
 * @param {import('./placement.js').Answer} answer
 * @returns {string | undefined}
 */
export declare function checkPlacement(request: import('./placement.js').Request, answer: import('./placement.js').Answer): string | undefined;
/** The string table the host keeps for one plugin instance. */
declare class Interner {
    #private;
    /** @param {string} value */
    id(value: string): number;
    /**
     * The strings added since the last call, as `new-strings`; `undefined` when none.
     * @returns {import('wasq:policy/types@1.1.0').NewStrings | undefined}
     */
    take(): import('wasq:policy/types@1.1.0').NewStrings | undefined;
    /** Starts a new table: the next strings sent have `first` 0. */
    restart(): void;
    get size(): number;
    /** Every string of the table, by id. */
    all(): string[];
}
/** What every simulated host shares: a string table, the needs the plugin answered. */
declare class SimulatedHost {
    #private;
    /** @type {Required<Needs>} */
    needs: Required<Needs>;
    /** @type {Interner} */
    strings: Interner;
    /**
     * Starts a new string table (as the host does when its table grows too large): the next
     * call's strings start at 0, and the tables of heads and rows start again with it.
     */
    restartStrings(): void;
    /** Whether this call starts the tables of heads and rows again (once per restart). */
    restartsTables(): boolean;
    /**
     * The WIT identity of `who`, interning its strings.
     * @param {Who} who
     * @returns {import('wasq:policy/types@1.1.0').WorkloadIdentity}
     */
    identity(who: Who): import('wasq:policy/types@1.1.0').WorkloadIdentity;
    /**
     * The WIT workload of a spec: identity and podSets only when sent (`always`: flavor
     * assignment and placement, which always carry them).
     * @param {WorkloadSpec} spec
     * @param {boolean} [always]
     * @returns {import('wasq:policy/types@1.1.0').Workload}
     */
    workload(spec: WorkloadSpec, always?: boolean): import('wasq:policy/types@1.1.0').Workload;
}
/**
 * Calls an ordering plugin as wasq does: `setCatalog`, then `sortKeys` and `orderHeads`
 * with the tables kept (a head crosses once while it waits under one key).
 */
export declare class OrderingHost extends SimulatedHost {
    #private;
    /** @type {ReturnType<typeof exportOrdering>} */ plugin: ReturnType<typeof exportOrdering>;
    /**
     * @param {ReturnType<typeof exportOrdering> | import('./ordering.js').OrderingPolicy} target
     *   the plugin's exported `ordering` interface, or a policy instance (exported here)
     */
    constructor(target: ReturnType<typeof exportOrdering> | import('./ordering.js').OrderingPolicy);
    /**
     * Sends a catalog; returns (and keeps) the plugin's needs.
     * @param {RawCatalog} catalog
     */
    setCatalog(catalog: RawCatalog): Required<import("wasq:policy/types@1.1.0").Needs>;
    /**
     * The keys of these workloads. `localQueueUsage` is sent when the plugin needs it.
     * @param {readonly WorkloadSpec[]} workloads
     * @param {{ localQueueUsage?: import('wasq:policy/types@1.1.0').LocalQueueUsage[], now?: Int }} [options]
     */
    sortKeys(workloads: readonly WorkloadSpec[], { localQueueUsage, now }?: {
        localQueueUsage?: import('wasq:policy/types@1.1.0').LocalQueueUsage[];
        now?: Int;
    }): kueue.SortKey[];
    /**
     * The order of this cycle's heads, as workload handles. `treeUsage` (the cohort trees' usage)
     * and each head's `usage` are sent when the plugin needs `treeUsage`.
     * @param {readonly HeadSpec[]} heads
     * @param {{ treeUsage?: NodeUsage[], now?: Int }} [options]
     * @returns {number[]}
     */
    orderHeads(heads: readonly HeadSpec[], { treeUsage, now }?: {
        treeUsage?: NodeUsage[];
        now?: Int;
    }): number[];
}
export type PreemptionRequestSpec = {
    preemptor: WorkloadSpec;
    /**
     * what it needs per flavor-resource
     */
    requests: Array<{
        fr: number;
        amount: Int;
    }>;
    /**
     * where it does not fit (every requested one by default)
     */
    needsPreemption?: number[];
    /**
     * in Kueue's candidate order
     */
    candidates?: CandidateSpec[];
    /**
     * the usage of the nodes concerned (each node's whole usage of
     * the requests' flavor-resources)
     */
    usage?: NodeUsage[];
    /**
     * the preemptor's cohort tree's usage (sent when the plugin
     * needs `treeUsage`)
     */
    treeUsage?: NodeUsage[];
    now?: Int;
};
/**
 * A preemption request as a test writes it.
 * @typedef {object} PreemptionRequestSpec
 * @property {WorkloadSpec} preemptor
 * @property {Array<{ fr: number, amount: Int }>} requests what it needs per flavor-resource
 * @property {number[]} [needsPreemption] where it does not fit (every requested one by default)
 * @property {CandidateSpec[]} [candidates] in Kueue's candidate order
 * @property {NodeUsage[]} [usage] the usage of the nodes concerned (each node's whole usage of
 *   the requests' flavor-resources)
 * @property {NodeUsage[]} [treeUsage] the preemptor's cohort tree's usage (sent when the plugin
 *   needs `treeUsage`)
 * @property {Int} [now]
 */
/**
 * Calls a preemption plugin as wasq does: `setCatalog`, then `selectVictims` with the table of
 * admitted workloads kept (a candidate's row crosses once per admission). With
 * `{ keepUsage: true }` it also sends usage as wasq does (`usageKept`: only the nodes whose
 * usage changed since the instance last received it); by default each request carries its own
 * usage (`usageKept: false`, as requests made by hand).
 */
export declare class PreemptionHost extends SimulatedHost {
    #private;
    /** @type {ReturnType<typeof exportPreemption>} */ plugin: ReturnType<typeof exportPreemption>;
    /**
     * @param {ReturnType<typeof exportPreemption> | import('./preemption.js').PreemptionPolicy} target
     *   the plugin's exported `preemption` interface, or a policy instance (exported here)
     * @param {{ keepUsage?: boolean }} [options]
     */
    constructor(target: ReturnType<typeof exportPreemption> | import('./preemption.js').PreemptionPolicy, { keepUsage }?: {
        keepUsage?: boolean;
    });
    /**
     * Sends a catalog; returns (and keeps) the plugin's needs.
     * @param {RawCatalog} catalog
     */
    setCatalog(catalog: RawCatalog): Required<import("wasq:policy/types@1.1.0").Needs>;
    /**
     * The answers to these requests, in one call.
     * @param {readonly PreemptionRequestSpec[]} requests
     * @returns {import('./preemption.js').Answer[]}
     */
    selectVictims(requests: readonly PreemptionRequestSpec[]): import('./preemption.js').Answer[];
}
export type FlavorRequestSpec = {
    workload: WorkloadSpec;
    podSet?: number;
    requests?: Array<{
        resource: number;
        amount: Int;
    }>;
    options: Array<import('wasq:policy/flavor-assignment@1.1.0').FlavorOption | undefined>;
    now?: Int;
};
/**
 * A flavor-assignment request as a test writes it.
 * @typedef {object} FlavorRequestSpec
 * @property {WorkloadSpec} workload
 * @property {number} [podSet]
 * @property {Array<{ resource: number, amount: Int }>} [requests]
 * @property {Array<import('wasq:policy/flavor-assignment@1.1.0').FlavorOption | undefined>} options
 * @property {Int} [now]
 */
/** Calls a flavor-assignment plugin as wasq does. */
export declare class FlavorAssignmentHost extends SimulatedHost {
    /** @type {ReturnType<typeof exportFlavorAssignment>} */ plugin: ReturnType<typeof exportFlavorAssignment>;
    /**
     * @param {ReturnType<typeof exportFlavorAssignment> | import('./flavor-assignment.js').FlavorAssignmentPolicy} target
     */
    constructor(target: ReturnType<typeof exportFlavorAssignment> | import('./flavor-assignment.js').FlavorAssignmentPolicy);
    /** @param {RawCatalog} catalog */
    setCatalog(catalog: RawCatalog): void;
    /**
     * @param {readonly FlavorRequestSpec[]} requests
     * @returns {Array<number | undefined>}
     */
    chooseFlavors(requests: readonly FlavorRequestSpec[]): Array<number | undefined>;
}
export type PlacementRequestSpec = {
    workload: WorkloadSpec;
    podSet?: number;
    flavor?: number;
    topology?: string;
    levelNames: string[];
    /**
     * `pods` first
     */
    resourceNames: string[];
    count: number;
    /**
     * milli-units per column (`pods` = 1000)
     */
    perPod: Int[];
    leader?: Int[];
    /**
     * unconstrained at the lowest level by default
     */
    constraint?: Partial<import('wasq:policy/placement@1.1.0').Constraint>;
    domains: Array<{
        level: number;
        parent: number | undefined;
        free: Int[];
    }>;
    leaves: Array<{
        domain: number;
        eligible: boolean;
    }>;
    now?: Int;
};
/**
 * A placement request as a test writes it: names as strings, the tree from `topology(...)`.
 * @typedef {object} PlacementRequestSpec
 * @property {WorkloadSpec} workload
 * @property {number} [podSet]
 * @property {number} [flavor]
 * @property {string} [topology]
 * @property {string[]} levelNames
 * @property {string[]} resourceNames `pods` first
 * @property {number} count
 * @property {Int[]} perPod milli-units per column (`pods` = 1000)
 * @property {Int[]} [leader]
 * @property {Partial<import('wasq:policy/placement@1.1.0').Constraint>} [constraint] unconstrained at the lowest level by default
 * @property {Array<{ level: number, parent: number | undefined, free: Int[] }>} domains
 * @property {Array<{ domain: number, eligible: boolean }>} leaves
 * @property {Int} [now]
 */
/** Calls a placement plugin as wasq does. */
export declare class PlacementHost extends SimulatedHost {
    #private;
    /** @type {ReturnType<typeof exportPlacement>} */ plugin: ReturnType<typeof exportPlacement>;
    /** @type {import('wasq:policy/placement@1.1.0').Request[]} The requests of the last call, as sent. */ sent: import('wasq:policy/placement@1.1.0').Request[];
    /**
     * @param {ReturnType<typeof exportPlacement> | import('./placement.js').PlacementPolicy} target
     */
    constructor(target: ReturnType<typeof exportPlacement> | import('./placement.js').PlacementPolicy);
    /** @param {RawCatalog} catalog */
    setCatalog(catalog: RawCatalog): void;
    /**
     * Why the host would refuse each of these answers to the requests of the last `place` call
     * (`checkPlacement`); `undefined` for an answer it accepts.
     * @param {readonly import('./placement.js').Answer[]} answers
     * @returns {Array<string | undefined>}
     */
    check(answers: readonly import('./placement.js').Answer[]): Array<string | undefined>;
    /**
     * @param {readonly PlacementRequestSpec[]} requests
     * @returns {import('./placement.js').Answer[]}
     */
    place(requests: readonly PlacementRequestSpec[]): import('./placement.js').Answer[];
}
export type ClusterSpec = {
    name: string;
    /**
     * default `true`
     */
    connected?: boolean;
    labels?: Record<string, string>;
    lostSince?: Int;
    queue?: {
        name?: string;
        pending?: number;
        admitted?: number;
        resources?: Array<{
            flavor: string;
            resource: string;
            nominal: Int;
            usage: Int;
        }>;
    };
    copySince?: Int;
};
export type DispatchRequestSpec = {
    now?: Int;
    workload?: {
        namespace?: string;
        name?: string;
        localQueue?: string;
        priority?: number;
        created?: Int;
        reserved?: Int;
        podSets?: Array<{
            name?: string;
            count: number;
            perPod?: Record<string, Int>;
        }>;
        labels?: Record<string, string>;
    };
    /**
     * a bare name is a connected cluster
     */
    clusters: Array<ClusterSpec | string>;
    nominated?: number[];
    lastNominated?: Int;
};
/**
 * The WIT `dispatch.request` of a spec, as the host sends it.
 * @param {DispatchRequestSpec} spec
 * @returns {import('wasq:policy/dispatch@1.1.0').Request}
 */
export declare function rawDispatchRequest(spec: DispatchRequestSpec): import('wasq:policy/dispatch@1.1.0').Request;
/**
 * The request view a dispatch policy receives, from a spec: to call `policy.dispatch(settings,
 * dispatchRequest({...}))` directly.
 * @param {DispatchRequestSpec} spec
 * @returns {DispatchRequest}
 */
export declare function dispatchRequest(spec: DispatchRequestSpec): DispatchRequest;
/** Kueue's limit on `nominatedClusterNames`: the most nominees an answer may have. */
export declare const MAX_NOMINEES = 20;
/**
 * Checks a dispatch answer as the host does (`src/policy/dispatch.rs`, `verify`): at most 20
 * nominees, each a cluster of the request, named once, connected unless already nominated;
 * `retryAfter` positive when present. Returns why the host would refuse it, or `undefined`.
 * @param {DispatchRequest} request
 * @param {import('./dispatch.js').Answer} answer
 * @returns {string | undefined}
 */
export declare function checkDispatch(request: DispatchRequest, answer: import('./dispatch.js').Answer): string | undefined;
/**
 * Calls a dispatch plugin as wasq does: `setSettings` once (the host does it before the
 * instance's first `dispatch`; an empty list when none are configured), then `dispatch`.
 */
export declare class DispatchHost {
    #private;
    /** @type {ReturnType<typeof exportDispatch>} */ plugin: ReturnType<typeof exportDispatch>;
    /** @type {import('wasq:policy/dispatch@1.1.0').Request[]} The requests of the last call, as sent. */ sent: import('wasq:policy/dispatch@1.1.0').Request[];
    /**
     * @param {ReturnType<typeof exportDispatch> | import('./dispatch.js').DispatchPolicy} target
     *   the plugin's exported interface, or a policy instance (exported for you)
     */
    constructor(target: ReturnType<typeof exportDispatch> | import('./dispatch.js').DispatchPolicy);
    /**
     * Sends the plugin's settings (an object, or `[key, value]` pairs).
     * @param {Record<string, string> | Iterable<[string, string]>} settings
     */
    setSettings(settings: Record<string, string> | Iterable<[string, string]>): void;
    /**
     * @param {readonly DispatchRequestSpec[]} requests
     * @returns {import('./dispatch.js').Answer[]}
     */
    dispatch(requests: readonly DispatchRequestSpec[]): import('./dispatch.js').Answer[];
    /**
     * Why the host would refuse each of these answers to the requests of the last `dispatch`
     * call (`checkDispatch`); `undefined` for an answer it accepts.
     * @param {readonly import('./dispatch.js').Answer[]} answers
     * @returns {Array<string | undefined>}
     */
    check(answers: readonly import('./dispatch.js').Answer[]): Array<string | undefined>;
}
export {};
