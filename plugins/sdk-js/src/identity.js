// Who a workload is — its namespace, the job that owns it, its LocalQueue, and the labels and
// annotations the plugin's allow-list passes — read alike on a workload, a head and a candidate.
//
// The host sends these strings once per instance into the string table; records carry
// `string-id`s. The views here resolve them: an id the host never sent reads as `''`, and a
// record whose identity was not sent (the plugin's `needs` lack `identity`) reads as nobody in
// particular: namespace `''`, no owner, no labels or annotations.

import { resolve } from './strings.js';

/** @typedef {import('wasq:policy/types@1.1.0').WorkloadIdentity} WorkloadIdentity */
/** @typedef {import('wasq:policy/types@1.1.0').Entry} Entry */
/** @typedef {import('./catalog.js').Catalog} Catalog */

/**
 * The job that owns a workload (its controller ownerReference), resolved.
 * @typedef {object} Owner
 * @property {string} kind for example `Job`, `JobSet`, `RayJob`, `Notebook`
 * @property {string} apiVersion group and version, for example `batch/v1`
 * @property {string} name the job's `metadata.name`, in the workload's namespace
 */

/**
 * The value of `key` among interned entries.
 * @param {readonly string[]} strings
 * @param {readonly Entry[] | undefined} entries
 * @param {string} key
 * @returns {string | undefined}
 */
function entry(strings, entries, key) {
  for (const e of entries ?? []) {
    if (resolve(strings, e.key) === key) return resolve(strings, e.value);
  }
  return undefined;
}

/**
 * Interned entries as an object of strings (a later key wins).
 * @param {readonly string[]} strings
 * @param {readonly Entry[] | undefined} entries
 * @returns {Record<string, string>}
 */
function entries(strings, entries) {
  /** @type {Record<string, string>} */
  const out = {};
  for (const e of entries ?? []) {
    Object.defineProperty(out, resolve(strings, e.key), {
      value: resolve(strings, e.value),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/**
 * What a workload, a head and a candidate share: who the workload is and its LocalQueue,
 * resolved through the instance's string table and the catalog.
 */
export class Identified {
  /** @type {Catalog} */
  #catalog;
  /** @type {readonly string[]} */
  #strings;
  /** @type {WorkloadIdentity | undefined} */
  #identity;
  /** @type {number | undefined} Its LocalQueue (`catalog.localQueues` index), when the host knows one. */
  localQueue;

  /**
   * @param {Catalog} catalog
   * @param {WorkloadIdentity | undefined} identity
   * @param {number | undefined} localQueue
   */
  constructor(catalog, identity, localQueue) {
    this.#catalog = catalog;
    // The table as of this call: the view keeps reading its own strings if the table restarts.
    this.#strings = catalog.strings.values;
    this.#identity = identity ?? undefined;
    this.localQueue = localQueue ?? undefined;
  }

  /** The raw WIT identity (string ids); `undefined` when the host did not send it. */
  get identity() {
    return this.#identity;
  }

  /** The Workload's namespace; `''` when the identity was not sent. */
  get namespace() {
    const identity = this.#identity;
    return identity ? resolve(this.#strings, identity.namespace) : '';
  }

  /**
   * The job that owns the workload; `undefined` for a Workload without a controller
   * ownerReference (created by hand) or when the identity was not sent.
   * @returns {Owner | undefined}
   */
  get owner() {
    const owner = this.#identity?.owner;
    if (!owner) return undefined;
    const s = this.#strings;
    return { kind: resolve(s, owner.kind), apiVersion: resolve(s, owner.apiVersion), name: resolve(s, owner.name) };
  }

  /** The owning job's kind (`Job`, `RayJob`, `Notebook`, …); `undefined` for a bare Workload. */
  get jobKind() {
    const owner = this.#identity?.owner;
    return owner ? resolve(this.#strings, owner.kind) : undefined;
  }

  /** The owning job's apiVersion (`batch/v1`, …); `undefined` for a bare Workload. */
  get jobApiVersion() {
    const owner = this.#identity?.owner;
    return owner ? resolve(this.#strings, owner.apiVersion) : undefined;
  }

  /** The owning job's name; `undefined` for a bare Workload. */
  get jobName() {
    const owner = this.#identity?.owner;
    return owner ? resolve(this.#strings, owner.name) : undefined;
  }

  /** The name of its LocalQueue (in its namespace); `undefined` when it has none the host knows. */
  get localQueueName() {
    return this.localQueue === undefined ? undefined : this.#catalog.localQueues[this.localQueue]?.name;
  }

  /**
   * The value of the label `key`, when the allow-list passes it and the workload has it.
   * @param {string} key
   * @returns {string | undefined}
   */
  label(key) {
    return entry(this.#strings, this.#identity?.labels, key);
  }

  /**
   * The value of the annotation `key`, when the allow-list passes it and the workload has it.
   * @param {string} key
   * @returns {string | undefined}
   */
  annotation(key) {
    return entry(this.#strings, this.#identity?.annotations, key);
  }

  /**
   * Every label the allow-list passes, by key.
   * @returns {Record<string, string>}
   */
  get labels() {
    return entries(this.#strings, this.#identity?.labels);
  }

  /**
   * Every annotation the allow-list passes, by key.
   * @returns {Record<string, string>}
   */
  get annotations() {
    return entries(this.#strings, this.#identity?.annotations);
  }
}

/**
 * A pending workload (`types.workload`): the WIT record's fields, its identity resolved.
 */
export class Workload extends Identified {
  /** @type {number} Its handle: stable for the workload's lifetime. */ id;
  /** @type {number} The ClusterQueue it is queued in (or, for a preemptor, admitted to). */ clusterQueue;
  /** @type {bigint} Effective priority (priority class value plus Kueue's priority boost). */ priority;
  /** @type {bigint} Creation time (ms): Kueue's queue-order timestamp. */ created;
  /** @type {bigint} When it last entered its queue (ms). */ queued;
  /** @type {number} How often it was evicted and queued again (0 = never). */ requeueCount;
  /** @type {import('wasq:policy/types@1.1.0').RequeueReason | undefined} Why it was last requeued. */ requeueReason;
  /**
   * @type {import('wasq:policy/types@1.1.0').PodSet[]} Its podSets, in order; empty when the
   * host sent none (an ordering or preemption plugin whose `needs` lack `podSets`).
   */
  podSets;
  /**
   * @type {import('wasq:policy/types@1.1.0').LocalQueueUsage | undefined} In `sortKey` only:
   * admission fair sharing's figures for its LocalQueue, when the plugin needs
   * `localQueueUsage` and the host sent them.
   */
  localQueueUsage;
  /** @type {import('wasq:policy/types@1.1.0').Workload} The WIT record as the host sent it. */ raw;

  /**
   * @param {Catalog} catalog
   * @param {import('wasq:policy/types@1.1.0').Workload} raw
   * @param {import('wasq:policy/types@1.1.0').LocalQueueUsage} [localQueueUsage]
   */
  constructor(catalog, raw, localQueueUsage) {
    super(catalog, raw.identity, raw.localQueue);
    this.raw = raw;
    this.id = raw.id;
    this.clusterQueue = raw.clusterQueue;
    this.priority = raw.priority;
    this.created = raw.created;
    this.queued = raw.queued;
    this.requeueCount = raw.requeueCount;
    this.requeueReason = raw.requeueReason ?? undefined;
    this.podSets = raw.podSets ? Array.from(raw.podSets) : [];
    this.localQueueUsage = localQueueUsage;
  }

  /**
   * Whether it was evicted and queued again at least `times` times (0: always): the test an
   * ordering uses to demote workloads that keep failing.
   * @param {number} times
   */
  requeuedAtLeast(times) {
    return this.requeueCount >= times;
  }
}
