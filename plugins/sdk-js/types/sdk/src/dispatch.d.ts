export type RawRequest = import('wasq:policy/dispatch@1.1.0').Request;
export type RawWorkload = import('wasq:policy/dispatch@1.1.0').Workload;
export type RawCluster = import('wasq:policy/dispatch@1.1.0').Cluster;
export type Label = import('wasq:policy/dispatch@1.1.0').Label;
export type PodSet = import('wasq:policy/dispatch@1.1.0').PodSet;
export type WorkerQueue = import('wasq:policy/dispatch@1.1.0').WorkerQueue;
export type Setting = import('wasq:policy/types@1.1.0').Setting;
/** @typedef {import('wasq:policy/dispatch@1.1.0').Request} RawRequest */
/** @typedef {import('wasq:policy/dispatch@1.1.0').Workload} RawWorkload */
/** @typedef {import('wasq:policy/dispatch@1.1.0').Cluster} RawCluster */
/** @typedef {import('wasq:policy/dispatch@1.1.0').Label} Label */
/** @typedef {import('wasq:policy/dispatch@1.1.0').PodSet} PodSet */
/** @typedef {import('wasq:policy/dispatch@1.1.0').WorkerQueue} WorkerQueue */
/** @typedef {import('wasq:policy/types@1.1.0').Setting} Setting */
/** Kueue's incremental dispatcher: clusters nominated per round (`stepSize`, default 3). */
export declare const DEFAULT_STEP = 3;
/** Kueue's `incrementalDispatcherRoundTimeout`: a round lasts 5 minutes (ms, a BigInt as every `millis`). */
export declare const ROUND_MS = 300000n;
export type Answer = {
    nominate: number[];
    retryAfter: bigint | undefined;
};
/**
 * The nominees for one request, as the WIT `answer` record crosses: `nominate`, indices into
 * `request.clusters` (it replaces the nominees so far: a cluster left out loses its copy;
 * empty: no cluster gets a copy for now); `retryAfter`, ask again after this many
 * milliseconds even if nothing changes (positive), `undefined`: only when something does.
 * @typedef {{ nominate: number[], retryAfter: bigint | undefined }} Answer
 */
/**
 * An answer: these clusters (or their indices), in this order, and optionally when to be
 * asked again (ms; a BigInt or a safe integer).
 * @param {Iterable<number | Cluster>} clusters
 * @param {bigint | number} [retryAfter]
 * @returns {Answer}
 */
export declare function nominate(clusters: Iterable<number | Cluster>, retryAfter?: bigint | number): Answer;
/**
 * Compares two names as Rust compares strings (by their UTF-8 bytes, which is the order of
 * their code points); JavaScript's `<` compares UTF-16 units, which differs past U+FFFF.
 * @param {string} a
 * @param {string} b
 * @returns {number}
 */
export declare function compareNames(a: string, b: string): number;
/**
 * The plugin's settings (`pluginSettings.<name>` in the wasq configuration, or a QueuePolicy's
 * `settings`), as written there, in the configuration's order.
 */
export declare class Settings {
    #private;
    /**
     * @param {Iterable<Setting> | Iterable<[string, string]> | Record<string, string>} [settings]
     *   the `setting` records the host sends, `[key, value]` pairs, or an object (for tests)
     */
    constructor(settings?: Iterable<Setting> | Iterable<[string, string]> | Record<string, string>);
    /**
     * The value of setting `key`, or `undefined` when it is not configured.
     * @param {string} key
     * @returns {string | undefined}
     */
    get(key: string): string | undefined;
    /**
     * A comma-separated setting as a list: items trimmed, blanks dropped; `fallback` when absent.
     * @param {string} key
     * @param {string} [fallback]
     * @returns {string[]}
     */
    getList(key: string, fallback?: string): string[];
    /**
     * Every setting, in the configuration's order.
     * @returns {Array<{ key: string, value: string }>}
     */
    all(): Array<{
        key: string;
        value: string;
    }>;
}
/**
 * A `stepSize` as Rust's `str::parse::<u32>` reads it (digits, an optional `+`, at most
 * 4294967295), when it is positive; `undefined` otherwise.
 * @param {string | undefined} text
 * @returns {number | undefined}
 */
export declare function parseStep(text: string | undefined): number | undefined;
/** The workload to dispatch (`dispatch.workload`), as the manager holds it. */
export declare class Workload {
    /** @type {string} Its namespace (the same on every worker). */ namespace: string;
    /** @type {string} Its name (its copies on the workers have the same). */ name: string;
    /** @type {string} Its LocalQueue's name. */ localQueue: string;
    /** @type {number} Its priority (the priority class value). */ priority: number;
    /** @type {bigint} Creation time (ms). */ created: bigint;
    /** @type {bigint} When it reserved quota on the manager (ms). */ reserved: bigint;
    /**
     * @type {Array<{ name: string, count: number, perPod: Array<{ name: string, amount: bigint }> }>}
     * Its podSets, in the Workload's order: per pod, each resource once, in name order
     * (milli-units).
     */
    podSets: Array<{
        name: string;
        count: number;
        perPod: Array<{
            name: string;
            amount: bigint;
        }>;
    }>;
    /**
     * @type {Record<string, string>} The labels the plugin's allow-list passes (every key under
     * `kueue.x-k8s.io/` and `wasq.dev/`, plus `pluginMetadata.<name>.labels`).
     */
    labels: Record<string, string>;
    /** @type {RawWorkload} As the host sent it. */ raw: RawWorkload;
    /** @param {RawWorkload} raw */
    constructor(raw: RawWorkload);
    /**
     * The value of the Workload's label `key` (if the allow-list passes it).
     * @param {string} key
     * @returns {string | undefined}
     */
    label(key: string): string | undefined;
    /**
     * What all its pods request of `resource` (count × per pod), in milli-units.
     * @param {string} resource
     * @returns {bigint}
     */
    totalRequest(resource: string): bigint;
}
/** One candidate worker (`dispatch.cluster`); `index` is what answers name. */
export declare class Cluster {
    /** @type {number} Its position in `request.clusters`. */ index: number;
    /** @type {string} Its MultiKueueCluster's name. */ name: string;
    /** @type {Record<string, string>} Its MultiKueueCluster's labels (all of them). */ labels: Record<string, string>;
    /**
     * @type {boolean} Whether the manager has a working connection to it. Only connected clusters
     * may be added to the nominees (one already nominated may stay).
     */
    connected: boolean;
    /** @type {bigint | undefined} Since when its connection is lost (undefined: connected, or unknown). */ lostSince: bigint | undefined;
    /** @type {WorkerQueue | undefined} The worker's ClusterQueue for the workload, when the manager sees it. */ queue: WorkerQueue | undefined;
    /** @type {bigint | undefined} Since when the workload has a copy there (undefined: no copy). */ copySince: bigint | undefined;
    /** @type {RawCluster} As the host sent it. */ raw: RawCluster;
    /**
     * @param {RawCluster} raw
     * @param {number} index
     * @param {boolean} [connected] taken instead of `raw.connected` (see `Only`)
     */
    constructor(raw: RawCluster, index: number, connected?: boolean);
    /**
     * The value of its MultiKueueCluster's label `key`.
     * @param {string} key
     * @returns {string | undefined}
     */
    label(key: string): string | undefined;
}
/**
 * One question (`dispatch.request`): the workload, its candidate clusters, and what was
 * nominated so far. Clusters are named by their index in `clusters`.
 */
export declare class Request {
    /** @type {bigint} The clock (ms): wall time in `wasq controller`, virtual in `wasq simulate`. */ now: bigint;
    /** @type {Workload} The workload to dispatch. */ workload: Workload;
    /** @type {Cluster[]} The clusters of its MultiKueueConfig, in the configuration's order. */ clusters: Cluster[];
    /** @type {number[]} The nominees so far, in nomination order (a nominee may have been lost since). */ nominated: number[];
    /**
     * @type {bigint | undefined} When the nominees last changed (the start of an incremental
     * dispatcher's round); `undefined` before the first nomination.
     */
    lastNominated: bigint | undefined;
    /** @type {RawRequest} As the host sent it. */ raw: RawRequest;
    /** @param {RawRequest} raw */
    constructor(raw: RawRequest);
    /**
     * The index of the cluster named `name`.
     * @param {string} name
     * @returns {number | undefined}
     */
    cluster(name: string): number | undefined;
}
/**
 * A request's clusters with those `keep` refuses taken as not connected: Kueue's dispatchers
 * over part of the clusters, the indices still the request's.
 *
 *   // Kueue's all-at-once, but only to clusters labelled for GPUs.
 *   allAtOnce(new Only(request, (c) => c.label('accelerator') === 'gpu'))
 */
export declare class Only {
    /** @type {Request} */ request: Request;
    /** @type {Cluster[]} Every cluster of the request, connected only if it is and `keep` keeps it. */ clusters: Cluster[];
    /**
     * @param {Request} request
     * @param {(cluster: Cluster) => unknown} keep
     */
    constructor(request: Request, keep: (cluster: Cluster) => unknown);
}
export type Workers = {
    clusters: readonly Cluster[];
};
/** @typedef {{ clusters: readonly Cluster[] }} Workers a `Request` or an `Only` */
/**
 * Kueue's `multikueue-dispatcher-all-at-once`: every connected cluster of `workers` (a
 * `Request` or an `Only`), by name; asked again only when something changes.
 * @param {Workers} workers
 * @returns {Answer}
 */
export declare function allAtOnce(workers: Workers): Answer;
/**
 * Kueue's `multikueue-dispatcher-incremental` with `step` clusters per five-minute round
 * (`DEFAULT_STEP` is Kueue's 3): the nominees of `request` stay while a round lasts, then the
 * next `step` connected clusters of `workers` not yet nominated, in the configuration's order,
 * are added (earlier nominees are never taken back).
 * @param {Workers} workers
 * @param {Request} request
 * @param {number} [step]
 * @returns {Answer}
 */
export declare function incremental(workers: Workers, request: Request, step?: number): Answer;
export type DispatchPolicy = {
    /**
     * called with the plugin's settings
     * before its first request: the place to read them.
     */
    settingsChanged?: (settings: Settings) => void;
    /**
     * every nominee (each
     * connected, each once, at most 20) and when to be asked again; `allAtOnce(request)` and
     * `incremental(request, request, step)` are Kueue's answers.
     */
    dispatch: (settings: Settings, request: Request) => Answer;
};
/**
 * A dispatch policy: what `exportDispatch` takes.
 * @typedef {object} DispatchPolicy
 * @property {(settings: Settings) => void} [settingsChanged] called with the plugin's settings
 *   before its first request: the place to read them.
 * @property {(settings: Settings, request: Request) => Answer} dispatch every nominee (each
 *   connected, each once, at most 20) and when to be asked again; `allAtOnce(request)` and
 *   `incremental(request, request, step)` are Kueue's answers.
 */
/**
 * The WIT interface `wasq:policy/dispatch` of a policy: export it from the plugin's entry
 * module as `export const dispatch = exportDispatch(new MyPolicy())`. An exception is logged
 * at error level through the host, then thrown again (the host falls back to its built-in
 * dispatcher for that call).
 * @param {DispatchPolicy} policy
 */
export declare function exportDispatch(policy: DispatchPolicy): {
    /** @param {Iterable<Setting>} raw */
    setSettings(raw: Iterable<Setting>): void;
    /**
     * @param {RawRequest[]} requests
     * @returns {Answer[]}
     */
    dispatch(requests: RawRequest[]): Answer[];
};
