export type WorkloadIdentity = import('wasq:policy/types@1.1.0').WorkloadIdentity;
export type Entry = import('wasq:policy/types@1.1.0').Entry;
export type Catalog = import('./catalog.js').Catalog;
export type Owner = {
    /**
     * for example `Job`, `JobSet`, `RayJob`, `Notebook`
     */
    kind: string;
    /**
     * group and version, for example `batch/v1`
     */
    apiVersion: string;
    /**
     * the job's `metadata.name`, in the workload's namespace
     */
    name: string;
};
/**
 * What a workload, a head and a candidate share: who the workload is and its LocalQueue,
 * resolved through the instance's string table and the catalog.
 */
export declare class Identified {
    #private;
    /** @type {number | undefined} Its LocalQueue (`catalog.localQueues` index), when the host knows one. */
    localQueue: number | undefined;
    /**
     * @param {Catalog} catalog
     * @param {WorkloadIdentity | undefined} identity
     * @param {number | undefined} localQueue
     */
    constructor(catalog: Catalog, identity: WorkloadIdentity | undefined, localQueue: number | undefined);
    /** The raw WIT identity (string ids); `undefined` when the host did not send it. */
    get identity(): import("wasq:policy/types@1.1.0").WorkloadIdentity | undefined;
    /** The Workload's namespace; `''` when the identity was not sent. */
    get namespace(): string;
    /**
     * The job that owns the workload; `undefined` for a Workload without a controller
     * ownerReference (created by hand) or when the identity was not sent.
     * @returns {Owner | undefined}
     */
    get owner(): Owner | undefined;
    /** The owning job's kind (`Job`, `RayJob`, `Notebook`, …); `undefined` for a bare Workload. */
    get jobKind(): string | undefined;
    /** The owning job's apiVersion (`batch/v1`, …); `undefined` for a bare Workload. */
    get jobApiVersion(): string | undefined;
    /** The owning job's name; `undefined` for a bare Workload. */
    get jobName(): string | undefined;
    /** The name of its LocalQueue (in its namespace); `undefined` when it has none the host knows. */
    get localQueueName(): string | undefined;
    /**
     * The value of the label `key`, when the allow-list passes it and the workload has it.
     * @param {string} key
     * @returns {string | undefined}
     */
    label(key: string): string | undefined;
    /**
     * The value of the annotation `key`, when the allow-list passes it and the workload has it.
     * @param {string} key
     * @returns {string | undefined}
     */
    annotation(key: string): string | undefined;
    /**
     * Every label the allow-list passes, by key.
     * @returns {Record<string, string>}
     */
    get labels(): Record<string, string>;
    /**
     * Every annotation the allow-list passes, by key.
     * @returns {Record<string, string>}
     */
    get annotations(): Record<string, string>;
}
/**
 * A pending workload (`types.workload`): the WIT record's fields, its identity resolved.
 */
export declare class Workload extends Identified {
    /** @type {number} Its handle: stable for the workload's lifetime. */ id: number;
    /** @type {number} The ClusterQueue it is queued in (or, for a preemptor, admitted to). */ clusterQueue: number;
    /** @type {bigint} Effective priority (priority class value plus Kueue's priority boost). */ priority: bigint;
    /** @type {bigint} Creation time (ms): Kueue's queue-order timestamp. */ created: bigint;
    /** @type {bigint} When it last entered its queue (ms). */ queued: bigint;
    /** @type {number} How often it was evicted and queued again (0 = never). */ requeueCount: number;
    /** @type {import('wasq:policy/types@1.1.0').RequeueReason | undefined} Why it was last requeued. */ requeueReason: import('wasq:policy/types@1.1.0').RequeueReason | undefined;
    /**
     * @type {import('wasq:policy/types@1.1.0').PodSet[]} Its podSets, in order; empty when the
     * host sent none (an ordering or preemption plugin whose `needs` lack `podSets`).
     */
    podSets: import('wasq:policy/types@1.1.0').PodSet[];
    /**
     * @type {import('wasq:policy/types@1.1.0').LocalQueueUsage | undefined} In `sortKey` only:
     * admission fair sharing's figures for its LocalQueue, when the plugin needs
     * `localQueueUsage` and the host sent them.
     */
    localQueueUsage: import('wasq:policy/types@1.1.0').LocalQueueUsage | undefined;
    /** @type {import('wasq:policy/types@1.1.0').Workload} The WIT record as the host sent it. */ raw: import('wasq:policy/types@1.1.0').Workload;
    /**
     * @param {Catalog} catalog
     * @param {import('wasq:policy/types@1.1.0').Workload} raw
     * @param {import('wasq:policy/types@1.1.0').LocalQueueUsage} [localQueueUsage]
     */
    constructor(catalog: Catalog, raw: import('wasq:policy/types@1.1.0').Workload, localQueueUsage?: import('wasq:policy/types@1.1.0').LocalQueueUsage);
    /**
     * Whether it was evicted and queued again at least `times` times (0: always): the test an
     * ordering uses to demote workloads that keep failing.
     * @param {number} times
     */
    requeuedAtLeast(times: number): boolean;
}
