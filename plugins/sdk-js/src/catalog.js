// The catalog a plugin receives (`types.catalog`), with lookups by name and by index.

import { StringTable } from './strings.js';

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
export class Catalog {
  /** @type {RawCatalog} */ raw;
  /** @type {bigint} */ generation;
  /** @type {string[]} Resource names; `resource-id` indexes them. */ resources;
  /** @type {import('wasq:policy/types@1.1.0').Flavor[]} ResourceFlavors; `flavor-id` indexes them. */ flavors;
  /** @type {import('wasq:policy/types@1.1.0').FlavorResource[]} Flavor-resource pairs; `fr-id` indexes them. */ flavorResources;
  /** @type {Node[]} The quota tree; `node-id` indexes it. */ nodes;
  /** @type {ClusterQueue[]} `cluster-queue-id` indexes them. */ clusterQueues;
  /** @type {LocalQueue[]} `local-queue-id` indexes them. */ localQueues;
  /** @type {string[]} Exposed annotation keys; `annotation-key` indexes them. */ annotationKeys;
  /** @type {import('wasq:policy/types@1.1.0').Setting[]} This plugin's settings, as written. */ settings;
  /** @type {import('wasq:policy/types@1.1.0').FairSharing | undefined} */ fairSharing;
  /** @type {import('wasq:policy/types@1.1.0').AdmissionFairSharing | undefined} */ admissionFairSharing;

  /** @type {StringTable} */
  #strings;
  /** @type {number[][]} node → its children, in increasing id */
  #children;
  /** @type {Array<number | undefined>} node → the ClusterQueue whose node it is */
  #queueOfNode;
  /** @type {Array<Map<number, Quota>>} node → its quotas by flavor-resource */
  #quotas;

  /**
   * Wraps a catalog as the host sent it.
   * @param {RawCatalog} raw
   * @param {StringTable} [strings] the instance's string table (a new, empty one by default)
   */
  constructor(raw, strings = new StringTable()) {
    this.raw = raw;
    this.generation = raw.generation;
    this.resources = Array.from(raw.resources ?? []);
    this.flavors = Array.from(raw.flavors ?? []);
    this.flavorResources = Array.from(raw.flavorResources ?? []);
    this.nodes = Array.from(raw.nodes ?? []);
    this.clusterQueues = Array.from(raw.clusterQueues ?? []);
    this.localQueues = Array.from(raw.localQueues ?? []);
    this.annotationKeys = Array.from(raw.annotationKeys ?? []);
    this.settings = Array.from(raw.settings ?? []);
    this.fairSharing = raw.fairSharing ?? undefined;
    this.admissionFairSharing = raw.admissionFairSharing ?? undefined;
    this.#strings = strings;
    const n = this.nodes.length;
    this.#children = Array.from({ length: n }, () => []);
    this.#quotas = this.nodes.map((node) => new Map((node.quotas ?? []).map((q) => [q.fr, q])));
    this.nodes.forEach((node, id) => {
      const parent = node.parent;
      if (parent !== undefined && parent !== null && parent < n) this.#children[parent].push(id);
    });
    /** @type {Array<number | undefined>} */
    const queueOfNode = new Array(n).fill(undefined);
    this.clusterQueues.forEach((cq, id) => {
      if (cq.node < n && queueOfNode[cq.node] === undefined) queueOfNode[cq.node] = id;
    });
    this.#queueOfNode = queueOfNode;
  }

  /**
   * The catalog before the host sent one: generation 0, everything empty.
   * @param {StringTable} [strings]
   * @returns {Catalog}
   */
  static empty(strings) {
    return new Catalog(
      {
        generation: 0n,
        resources: [],
        flavors: [],
        flavorResources: [],
        nodes: [],
        clusterQueues: [],
        localQueues: [],
        annotationKeys: [],
        settings: [],
        fairSharing: undefined,
        admissionFairSharing: undefined,
      },
      strings,
    );
  }

  /** The instance's string table (`new-strings`), shared with the views of every request. */
  get strings() {
    return this.#strings;
  }

  /**
   * A string of the instance's string table; `''` for an id the host never sent.
   * @param {number} id
   * @returns {string}
   */
  string(id) {
    return this.#strings.get(id);
  }

  // --- Settings and annotations ---------------------------------------------------------

  /**
   * The value of this plugin's setting `key` (`pluginSettings.<plugin>.<key>` in the wasq
   * configuration), as written; `undefined` when it is not configured.
   * @param {string} key
   * @returns {string | undefined}
   */
  setting(key) {
    return this.settings.find((s) => s.key === key)?.value;
  }

  /**
   * A comma-separated setting as a list: items trimmed, blanks dropped. `fallback` (also a
   * comma-separated string) applies only when the setting is absent: an empty setting is an
   * empty list.
   * @param {string} key
   * @param {string} [fallback]
   * @returns {string[]}
   */
  settingList(key, fallback = '') {
    return splitList(this.setting(key) ?? fallback);
  }

  /**
   * The index of an exposed annotation key, by name.
   * @param {string} name
   * @returns {number | undefined}
   */
  annotationKey(name) {
    const i = this.annotationKeys.indexOf(name);
    return i < 0 ? undefined : i;
  }

  /**
   * The value of the annotation `name` in a list the host sent (of a flavor, ClusterQueue or
   * Cohort): `catalog.annotation(catalog.flavors[f].annotations, 'wasq.dev/cost')`;
   * `undefined` when absent or not exposed.
   * @param {readonly Annotation[]} annotations
   * @param {string} name
   * @returns {string | undefined}
   */
  annotation(annotations, name) {
    const key = this.annotationKey(name);
    if (key === undefined) return undefined;
    return annotations.find((a) => a.key === key)?.value;
  }

  // --- The quota tree ---------------------------------------------------------------------

  /**
   * A node of the quota tree (`undefined` for an unknown id).
   * @param {number} id
   * @returns {Node | undefined}
   */
  node(id) {
    return this.nodes[id];
  }

  /**
   * The parent Cohort of a node (`undefined` for a root or an unknown node).
   * @param {number} id
   * @returns {number | undefined}
   */
  parent(id) {
    const parent = this.nodes[id]?.parent;
    return parent === null ? undefined : parent;
  }

  /**
   * The ancestors of a node, from its parent up to its root. Stops after as many steps as there
   * are nodes, so a malformed catalog with a cycle cannot loop forever.
   * @param {number} id
   * @returns {number[]}
   */
  ancestors(id) {
    const out = [];
    for (let p = this.parent(id); p !== undefined && out.length < this.nodes.length; p = this.parent(p)) {
      out.push(p);
    }
    return out;
  }

  /**
   * The root of a node's tree (the node itself when it has no parent).
   * @param {number} id
   * @returns {number}
   */
  root(id) {
    const up = this.ancestors(id);
    return up.length ? up[up.length - 1] : id;
  }

  /**
   * The children of a Cohort, in increasing id (empty for a ClusterQueue or an unknown node).
   * @param {number} id
   * @returns {readonly number[]}
   */
  children(id) {
    return this.#children[id] ?? [];
  }

  /**
   * Whether a node is a Cohort (`false` for a ClusterQueue or an unknown node).
   * @param {number} id
   */
  isCohort(id) {
    return this.nodes[id]?.kind === 'cohort';
  }

  /**
   * The quota a node has for a flavor-resource: all figures 0 and no limits when the node does
   * not list it (or does not exist).
   * @param {number} node
   * @param {number} fr
   * @returns {Quota}
   */
  quota(node, fr) {
    return (
      this.#quotas[node]?.get(fr) ?? {
        fr,
        nominal: 0n,
        borrowingLimit: undefined,
        lendingLimit: undefined,
        subtree: 0n,
        guaranteed: 0n,
      }
    );
  }

  /**
   * Kueue's `potentialAvailable`: the most a node could ever hold of `fr`, ignoring usage (its
   * guaranteed quota plus what its parent could hold, capped by its borrowing limit; a root's
   * subtree quota).
   * @param {number} node
   * @param {number} fr
   * @returns {bigint}
   */
  potentialAvailable(node, fr) {
    const chain = [node, ...this.ancestors(node)];
    let available = this.quota(chain[chain.length - 1], fr).subtree;
    for (let i = chain.length - 2; i >= 0; i--) {
      const q = this.quota(chain[i], fr);
      available = q.guaranteed + available;
      if (q.borrowingLimit !== undefined && q.borrowingLimit !== null) {
        const cap = q.subtree + q.borrowingLimit;
        if (cap < available) available = cap;
      }
    }
    return available;
  }

  // --- Queues -------------------------------------------------------------------------------

  /**
   * A ClusterQueue (`undefined` for an unknown id).
   * @param {number} id
   * @returns {ClusterQueue | undefined}
   */
  clusterQueue(id) {
    return this.clusterQueues[id];
  }

  /**
   * The id of the ClusterQueue named `name`.
   * @param {string} name
   * @returns {number | undefined}
   */
  clusterQueueId(name) {
    const i = this.clusterQueues.findIndex((cq) => cq.name === name);
    return i < 0 ? undefined : i;
  }

  /**
   * The quota-tree node of a ClusterQueue.
   * @param {number} id
   * @returns {number | undefined}
   */
  clusterQueueNode(id) {
    return this.clusterQueues[id]?.node;
  }

  /**
   * The ClusterQueue whose quota-tree node `node` is (`undefined` for a Cohort).
   * @param {number} node
   * @returns {number | undefined}
   */
  clusterQueueOfNode(node) {
    return this.#queueOfNode[node];
  }

  /**
   * A LocalQueue (`undefined` for an unknown id).
   * @param {number} id
   * @returns {LocalQueue | undefined}
   */
  localQueue(id) {
    return this.localQueues[id];
  }

  /**
   * The flavor-resource of a flavor and a resource, by name.
   * @param {string} flavor
   * @param {string} resource
   * @returns {number | undefined}
   */
  flavorResourceId(flavor, resource) {
    const i = this.flavorResources.findIndex(
      (fr) => this.flavors[fr.flavor]?.name === flavor && this.resources[fr.resource] === resource,
    );
    return i < 0 ? undefined : i;
  }

  /** Whether Kueue's fair sharing is on (`catalog.fairSharing` is present). */
  get fairSharingEnabled() {
    return this.fairSharing !== undefined && this.fairSharing !== null;
  }

  /**
   * Whether a ClusterQueue orders its queue by admission fair sharing: admission fair sharing
   * is configured and the ClusterQueue's `admissionFairSharing` flag is set.
   * @param {number} cq
   */
  usesAdmissionFairSharing(cq) {
    return (
      this.admissionFairSharing !== undefined &&
      this.admissionFairSharing !== null &&
      this.clusterQueues[cq]?.admissionFairSharing === true
    );
  }
}

/**
 * A comma-separated list: items trimmed, blanks dropped.
 * @param {string} text
 * @returns {string[]}
 */
export function splitList(text) {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** Milliseconds per duration unit. */
const UNITS = /** @type {Record<string, bigint>} */ ({
  ms: 1n,
  s: 1000n,
  m: 60000n,
  h: 3600000n,
  d: 86400000n,
});

/**
 * Parses a duration the way Kubernetes and Go write them into milliseconds: one or more
 * `<integer><unit>` parts with units `ms`, `s`, `m`, `h`, `d`, summed (`'1h30m'` →
 * `5400000n`); `'0'` alone is zero. Surrounding blanks are ignored; signs and fractions are not
 * accepted. Throws a `RangeError` naming what is wrong.
 * @param {string} text
 * @returns {bigint}
 */
export function parseDuration(text) {
  const t = String(text).trim();
  if (t === '') throw new RangeError('empty duration');
  if (t === '0') return 0n;
  let total = 0n;
  const part = /(\d*)([a-zA-Z]*)/y;
  let at = 0;
  while (at < t.length) {
    part.lastIndex = at;
    const m = part.exec(t);
    const [whole, number, unit] = m ?? ['', '', ''];
    if (number === '') throw new RangeError(`expected a number at ${JSON.stringify(t.slice(at))}`);
    if (unit === '') throw new RangeError(`missing unit after ${JSON.stringify(number)} (use ms, s, m, h or d)`);
    const scale = UNITS[unit];
    if (scale === undefined) throw new RangeError(`unknown unit ${JSON.stringify(unit)} (use ms, s, m, h or d)`);
    total += BigInt(number) * scale;
    at += whole.length;
  }
  if (total > 0x7fffffffffffffffn) throw new RangeError('duration too large');
  return total;
}
