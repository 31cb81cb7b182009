// Dispatch policies (MultiKueue, added in `wasq:policy@1.1.0`): a class with
// `dispatch(settings, request)` (and optionally `settingsChanged(settings)`), exported with
// `export const dispatch = exportDispatch(new MyPolicy())`.
//
// The host asks which worker clusters get a copy of a workload that reserved quota behind a
// MultiKueue admission check: when its quota is reserved, when a worker connects or is lost,
// and when the time an answer asked for comes (`retryAfter`). A request carries the workload
// (names, podSets, labels), every cluster of its MultiKueueConfig in the configuration's order
// (name, labels, connected or not, the worker's ClusterQueue when the manager sees it, whether
// the workload has a copy there) and the nominees so far. The answer is the whole list of
// nominees, as indices into `request.clusters`; the host checks that each is connected (unless
// already nominated), named once, at most 20 of them, and otherwise lets the built-in
// dispatcher decide.
//
// Unlike the other kinds, a dispatch request carries names as plain strings: there is no
// catalog and no string table. The plugin's settings arrive once per instance
// (`settingsChanged`).
//
// Kueue's two dispatchers are here to reuse (`allAtOnce`, `incremental`), over the whole
// request or over the clusters a policy keeps (`Only`): they decide exactly as the Rust SDK's
// and the host's (`wasq-kueue`'s `dispatch`).

import { checkIndices, checkPolicy, positionOf, reported } from './export.js';

/** @typedef {import('wasq:policy/dispatch@1.1.0').Request} RawRequest */
/** @typedef {import('wasq:policy/dispatch@1.1.0').Workload} RawWorkload */
/** @typedef {import('wasq:policy/dispatch@1.1.0').Cluster} RawCluster */
/** @typedef {import('wasq:policy/dispatch@1.1.0').Label} Label */
/** @typedef {import('wasq:policy/dispatch@1.1.0').PodSet} PodSet */
/** @typedef {import('wasq:policy/dispatch@1.1.0').WorkerQueue} WorkerQueue */
/** @typedef {import('wasq:policy/types@1.1.0').Setting} Setting */

/** Kueue's incremental dispatcher: clusters nominated per round (`stepSize`, default 3). */
export const DEFAULT_STEP = 3;
/** Kueue's `incrementalDispatcherRoundTimeout`: a round lasts 5 minutes (ms, a BigInt as every `millis`). */
export const ROUND_MS = 300000n;

const S64_MAX = (1n << 63n) - 1n;
const S64_MIN = -(1n << 63n);

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
export function nominate(clusters, retryAfter) {
  return {
    nominate: Array.from(clusters, (c) => /** @type {number} */ (positionOf(c))),
    retryAfter: retryAfter === undefined ? undefined : BigInt(retryAfter),
  };
}

/**
 * Compares two names as Rust compares strings (by their UTF-8 bytes, which is the order of
 * their code points); JavaScript's `<` compares UTF-16 units, which differs past U+FFFF.
 * @param {string} a
 * @param {string} b
 * @returns {number}
 */
export function compareNames(a, b) {
  let i = 0;
  while (i < a.length && i < b.length) {
    const x = /** @type {number} */ (a.codePointAt(i));
    const y = /** @type {number} */ (b.codePointAt(i));
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
  }
  return a.length === b.length ? 0 : i < a.length ? 1 : -1;
}

/**
 * Labels as an object of strings, in the order sent (the first of a key wins).
 * @param {Iterable<Label> | undefined} labels
 * @returns {Record<string, string>}
 */
function labelObject(labels) {
  /** @type {Record<string, string>} */
  const out = {};
  for (const l of labels ?? []) {
    if (Object.prototype.hasOwnProperty.call(out, l.key)) continue;
    Object.defineProperty(out, l.key, { value: l.value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

// --- Settings -------------------------------------------------------------------------------

/**
 * The plugin's settings (`pluginSettings.<name>` in the wasq configuration, or a QueuePolicy's
 * `settings`), as written there, in the configuration's order.
 */
export class Settings {
  /** @type {Array<{ key: string, value: string }>} */
  #pairs;

  /**
   * @param {Iterable<Setting> | Iterable<[string, string]> | Record<string, string>} [settings]
   *   the `setting` records the host sends, `[key, value]` pairs, or an object (for tests)
   */
  constructor(settings = []) {
    const items =
      settings !== null && typeof settings === 'object' && Symbol.iterator in settings
        ? Array.from(/** @type {Iterable<any>} */ (settings))
        : Object.entries(settings ?? {});
    this.#pairs = items.map((s) => (Array.isArray(s) ? { key: String(s[0]), value: String(s[1]) } : { key: String(s.key), value: String(s.value) }));
  }

  /**
   * The value of setting `key`, or `undefined` when it is not configured.
   * @param {string} key
   * @returns {string | undefined}
   */
  get(key) {
    return this.#pairs.find((s) => s.key === key)?.value;
  }

  /**
   * A comma-separated setting as a list: items trimmed, blanks dropped; `fallback` when absent.
   * @param {string} key
   * @param {string} [fallback]
   * @returns {string[]}
   */
  getList(key, fallback = '') {
    return (this.get(key) ?? fallback)
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  }

  /**
   * Every setting, in the configuration's order.
   * @returns {Array<{ key: string, value: string }>}
   */
  all() {
    return this.#pairs.map((s) => ({ ...s }));
  }
}

/**
 * A `stepSize` as Rust's `str::parse::<u32>` reads it (digits, an optional `+`, at most
 * 4294967295), when it is positive; `undefined` otherwise.
 * @param {string | undefined} text
 * @returns {number | undefined}
 */
export function parseStep(text) {
  if (text === undefined || !/^\+?[0-9]+$/.test(text)) return undefined;
  const step = Number(BigInt(text));
  return step > 0 && step <= 0xffffffff ? step : undefined;
}

// --- The request ----------------------------------------------------------------------------

/** The workload to dispatch (`dispatch.workload`), as the manager holds it. */
export class Workload {
  /** @type {string} Its namespace (the same on every worker). */ namespace;
  /** @type {string} Its name (its copies on the workers have the same). */ name;
  /** @type {string} Its LocalQueue's name. */ localQueue;
  /** @type {number} Its priority (the priority class value). */ priority;
  /** @type {bigint} Creation time (ms). */ created;
  /** @type {bigint} When it reserved quota on the manager (ms). */ reserved;
  /**
   * @type {Array<{ name: string, count: number, perPod: Array<{ name: string, amount: bigint }> }>}
   * Its podSets, in the Workload's order: per pod, each resource once, in name order
   * (milli-units).
   */
  podSets;
  /**
   * @type {Record<string, string>} The labels the plugin's allow-list passes (every key under
   * `kueue.x-k8s.io/` and `wasq.dev/`, plus `pluginMetadata.<name>.labels`).
   */
  labels;
  /** @type {RawWorkload} As the host sent it. */ raw;

  /** @param {RawWorkload} raw */
  constructor(raw) {
    this.raw = raw;
    this.namespace = raw.namespace;
    this.name = raw.name;
    this.localQueue = raw.localQueue;
    this.priority = raw.priority;
    this.created = raw.created;
    this.reserved = raw.reserved;
    this.podSets = Array.from(raw.podSets, (p) => ({ name: p.name, count: p.count, perPod: Array.from(p.perPod, (q) => ({ name: q.name, amount: q.amount })) }));
    this.labels = labelObject(raw.labels);
  }

  /**
   * The value of the Workload's label `key` (if the allow-list passes it).
   * @param {string} key
   * @returns {string | undefined}
   */
  label(key) {
    return Object.prototype.hasOwnProperty.call(this.labels, key) ? this.labels[key] : undefined;
  }

  /**
   * What all its pods request of `resource` (count × per pod), in milli-units.
   * @param {string} resource
   * @returns {bigint}
   */
  totalRequest(resource) {
    let total = 0n;
    for (const p of this.podSets) {
      for (const q of p.perPod) if (q.name === resource) total += BigInt(p.count) * q.amount;
    }
    return total;
  }
}

/** One candidate worker (`dispatch.cluster`); `index` is what answers name. */
export class Cluster {
  /** @type {number} Its position in `request.clusters`. */ index;
  /** @type {string} Its MultiKueueCluster's name. */ name;
  /** @type {Record<string, string>} Its MultiKueueCluster's labels (all of them). */ labels;
  /**
   * @type {boolean} Whether the manager has a working connection to it. Only connected clusters
   * may be added to the nominees (one already nominated may stay).
   */
  connected;
  /** @type {bigint | undefined} Since when its connection is lost (undefined: connected, or unknown). */ lostSince;
  /** @type {WorkerQueue | undefined} The worker's ClusterQueue for the workload, when the manager sees it. */ queue;
  /** @type {bigint | undefined} Since when the workload has a copy there (undefined: no copy). */ copySince;
  /** @type {RawCluster} As the host sent it. */ raw;

  /**
   * @param {RawCluster} raw
   * @param {number} index
   * @param {boolean} [connected] taken instead of `raw.connected` (see `Only`)
   */
  constructor(raw, index, connected) {
    this.raw = raw;
    this.index = index;
    this.name = raw.name;
    this.labels = labelObject(raw.labels);
    this.connected = connected ?? raw.connected;
    this.lostSince = raw.lostSince ?? undefined;
    this.queue = raw.queue ?? undefined;
    this.copySince = raw.copySince ?? undefined;
  }

  /**
   * The value of its MultiKueueCluster's label `key`.
   * @param {string} key
   * @returns {string | undefined}
   */
  label(key) {
    return Object.prototype.hasOwnProperty.call(this.labels, key) ? this.labels[key] : undefined;
  }
}

/**
 * One question (`dispatch.request`): the workload, its candidate clusters, and what was
 * nominated so far. Clusters are named by their index in `clusters`.
 */
export class Request {
  /** @type {bigint} The clock (ms): wall time in `wasq controller`, virtual in `wasq simulate`. */ now;
  /** @type {Workload} The workload to dispatch. */ workload;
  /** @type {Cluster[]} The clusters of its MultiKueueConfig, in the configuration's order. */ clusters;
  /** @type {number[]} The nominees so far, in nomination order (a nominee may have been lost since). */ nominated;
  /**
   * @type {bigint | undefined} When the nominees last changed (the start of an incremental
   * dispatcher's round); `undefined` before the first nomination.
   */
  lastNominated;
  /** @type {RawRequest} As the host sent it. */ raw;

  /** @param {RawRequest} raw */
  constructor(raw) {
    this.raw = raw;
    this.now = raw.now;
    this.workload = new Workload(raw.workload);
    this.clusters = Array.from(raw.clusters, (c, i) => new Cluster(c, i));
    this.nominated = Array.from(raw.nominated);
    this.lastNominated = raw.lastNominated ?? undefined;
  }

  /**
   * The index of the cluster named `name`.
   * @param {string} name
   * @returns {number | undefined}
   */
  cluster(name) {
    return this.clusters.find((c) => c.name === name)?.index;
  }
}

/**
 * A request's clusters with those `keep` refuses taken as not connected: Kueue's dispatchers
 * over part of the clusters, the indices still the request's.
 *
 *   // Kueue's all-at-once, but only to clusters labelled for GPUs.
 *   allAtOnce(new Only(request, (c) => c.label('accelerator') === 'gpu'))
 */
export class Only {
  /** @type {Request} */ request;
  /** @type {Cluster[]} Every cluster of the request, connected only if it is and `keep` keeps it. */ clusters;

  /**
   * @param {Request} request
   * @param {(cluster: Cluster) => unknown} keep
   */
  constructor(request, keep) {
    this.request = request;
    this.clusters = request.clusters.map((c) => new Cluster(c.raw, c.index, c.connected && Boolean(keep(c))));
  }
}

/** @typedef {{ clusters: readonly Cluster[] }} Workers a `Request` or an `Only` */

// --- Kueue's dispatchers --------------------------------------------------------------------

/**
 * Kueue's `multikueue-dispatcher-all-at-once`: every connected cluster of `workers` (a
 * `Request` or an `Only`), by name; asked again only when something changes.
 * @param {Workers} workers
 * @returns {Answer}
 */
export function allAtOnce(workers) {
  const connected = workers.clusters.filter((c) => c.connected);
  connected.sort((a, b) => compareNames(a.name, b.name));
  return nominate(connected);
}

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
export function incremental(workers, request, step = DEFAULT_STEP) {
  const nominated = Array.from(request.nominated);
  const started = request.lastNominated;
  if (started !== undefined) {
    const end = started + ROUND_MS > S64_MAX ? S64_MAX : started + ROUND_MS;
    // Wrapped to an s64, as Rust's release arithmetic does.
    const left = BigInt.asIntN(64, end - request.now);
    if (left > 0n) return nominate(nominated, left);
  }
  const clusters = workers.clusters;
  const batch = clusters
    .filter((c) => !nominated.includes(c.index) && c.connected)
    .slice(0, Math.max(step, 1))
    .map((c) => c.index);
  // Nothing left to add now; a cluster that connects later is asked about then.
  if (batch.length === 0) return nominate(nominated);
  const all = [...nominated, ...batch];
  const more = clusters.some((_, i) => !all.includes(i));
  return nominate(all, more ? ROUND_MS : undefined);
}

// --- The policy -----------------------------------------------------------------------------

/**
 * Checks an answer's form (the host checks the rest: connected, at most 20).
 * @param {unknown} answer
 * @param {RawRequest} request
 * @returns {Answer}
 */
function checkAnswer(answer, request) {
  const a = /** @type {{ nominate?: unknown, retryAfter?: unknown }} */ (answer ?? {});
  if (answer === null || typeof answer !== 'object' || !('nominate' in a)) {
    throw new TypeError(`dispatch must return { nominate, retryAfter } (see nominate(...)); got ${String(answer)}`);
  }
  const n = request.clusters.length;
  const list = checkIndices(Array.from(/** @type {Iterable<unknown>} */ (a.nominate ?? []), positionOf), n, `the ${n} clusters`);
  const r = a.retryAfter;
  if (r === undefined || r === null) return { nominate: list, retryAfter: undefined };
  if ((typeof r !== 'bigint' && !Number.isSafeInteger(r)) || BigInt(/** @type {any} */ (r)) < S64_MIN || BigInt(/** @type {any} */ (r)) > S64_MAX) {
    throw new RangeError(`retryAfter ${String(r)} is not a 64-bit integer of milliseconds`);
  }
  return { nominate: list, retryAfter: BigInt(/** @type {any} */ (r)) };
}

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
export function exportDispatch(policy) {
  checkPolicy(policy, 'dispatch', ['dispatch'], ['settingsChanged']);
  let settings = new Settings();
  return {
    /** @param {Iterable<Setting>} raw */
    setSettings(raw) {
      reported('set-settings', () => {
        settings = new Settings(raw);
        policy.settingsChanged?.(settings);
      });
    },
    /**
     * @param {RawRequest[]} requests
     * @returns {Answer[]}
     */
    dispatch(requests) {
      return reported('dispatch', () => Array.from(requests, (raw) => checkAnswer(policy.dispatch(settings, new Request(raw)), raw)));
    },
  };
}
