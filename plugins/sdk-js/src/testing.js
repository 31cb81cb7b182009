// Testing policies under `node --test`, without building a component: a catalog builder that
// derives quotas as the host does, builders of workloads, heads, candidates and topologies
// written with plain strings, and simulated hosts that call a policy's exported WIT interface
// exactly as wasq does — interning strings into the string table, filling the tables of heads
// and admitted workloads, sending only what the policy's `needs` ask for, and (optionally)
// sending quota usage as changes to what the instance keeps.

import { clearMemoryLines, memoryLines } from './log.js';
import { exportFlavorAssignment } from './flavor-assignment.js';
import { exportOrdering } from './ordering.js';
import { Catalog } from './catalog.js';
import { exportPlacement, Request as PlacementRequest } from './placement.js';
import { StringTable } from './strings.js';
import { exportPreemption } from './preemption.js';
import { exportDispatch, Request as DispatchRequest } from './dispatch.js';
import * as kueue from './kueue.js';

/** @typedef {import('wasq:policy/types@1.1.0').Catalog} RawCatalog */
/** @typedef {import('wasq:policy/types@1.1.0').Needs} Needs */
/** @typedef {import('wasq:policy/types@1.1.0').FrAmount} FrAmount */
/** @typedef {import('wasq:policy/types@1.1.0').NodeUsage} NodeUsage */
/** @typedef {bigint | number} Int a quantity, time or priority: a BigInt, or a safe integer */

/**
 * @param {Int | undefined} v
 * @param {bigint} [fallback]
 */
const big = (v, fallback = 0n) => (v === undefined || v === null ? fallback : BigInt(v));

// --- Logs ------------------------------------------------------------------------------------

/**
 * The lines policies logged (outside a component they are kept in memory), oldest first, as
 * `[level, message]`.
 * @returns {Array<[import('wasq:policy/types@1.1.0').Level, string]>}
 */
export function logs() {
  return memoryLines();
}

/** Forgets the lines logged so far. */
export function clearLogs() {
  clearMemoryLines();
}

// --- Catalogs -------------------------------------------------------------------------------

/**
 * A deep copy of plain data (objects, arrays, typed arrays, BigInts).
 * @template T
 * @param {T} value
 * @returns {T}
 */
function copy(value) {
  if (Array.isArray(value)) return /** @type {T} */ (value.map(copy));
  if (ArrayBuffer.isView(value)) return /** @type {any} */ (value).slice();
  if (value !== null && typeof value === 'object') {
    return /** @type {T} */ (Object.fromEntries(Object.entries(value).map(([k, v]) => [k, copy(v)])));
  }
  return value;
}

/**
 * Builds a catalog (the WIT record `setCatalog` takes) node by node. Nodes get ids in the order
 * they are added; every ClusterQueue node also gets a ClusterQueue (ids in order too) with
 * Kueue's default preemption and fungibility. `build()` derives subtree and guaranteed quotas
 * and heights as the host does.
 */
export class CatalogBuilder {
  /** @type {RawCatalog} */
  #raw = {
    generation: 1n,
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
  };
  /** @type {Array<Array<{ fr: number, nominal: bigint, borrowingLimit: bigint | undefined, lendingLimit: bigint | undefined }>>} */
  #declared = [];

  /**
   * Sets the catalog's generation (1 by default).
   * @param {Int} generation
   */
  generation(generation) {
    this.#raw.generation = BigInt(generation);
    return this;
  }

  /** @param {string} name */
  #resource(name) {
    let i = this.#raw.resources.indexOf(name);
    if (i < 0) i = this.#raw.resources.push(name) - 1;
    return i;
  }

  /**
   * Adds `n` flavor-resources: flavor `i` (named `f<i>`) with resource `cpu`.
   * @param {number} n
   */
  flavorResources(n) {
    const cpu = this.#resource('cpu');
    for (let k = 0; k < n; k++) {
      const flavor = this.#raw.flavors.push({ name: `f${this.#raw.flavors.length}`, annotations: [] }) - 1;
      this.#raw.flavorResources.push({ flavor, resource: cpu });
    }
    return this;
  }

  /**
   * Adds a flavor (named `name`, `f<i>` by default) with one flavor-resource per resource name,
   * in order: `resourceFlavors(['cpu', 'nvidia.com/gpu'])` on an empty builder gives
   * flavor-resources 0 = (f0, cpu) and 1 = (f0, nvidia.com/gpu).
   * @param {readonly string[]} resources
   * @param {string} [name]
   */
  resourceFlavors(resources, name) {
    const flavor = this.#raw.flavors.push({ name: name ?? `f${this.#raw.flavors.length}`, annotations: [] }) - 1;
    for (const r of resources) this.#raw.flavorResources.push({ flavor, resource: this.#resource(r) });
    return this;
  }

  /**
   * Turns fair sharing on with these preemption strategies.
   * @param {import('wasq:policy/types@1.1.0').FairSharingStrategy[]} [strategies]
   */
  fairSharing(strategies = ['less-than-or-equal-to-final-share', 'less-than-initial-share']) {
    this.#raw.fairSharing = { strategies };
    return this;
  }

  /**
   * Turns admission fair sharing on (`resourceWeights` by resource, 1.0 beyond).
   * @param {Int} halfLife
   * @param {Int} samplingInterval
   * @param {readonly number[]} [resourceWeights]
   */
  admissionFairSharing(halfLife, samplingInterval, resourceWeights = []) {
    const weights = Array.from({ length: Math.max(resourceWeights.length, this.#raw.resources.length) }, (_, i) => resourceWeights[i] ?? 1);
    this.#raw.admissionFairSharing = { halfLife: BigInt(halfLife), samplingInterval: BigInt(samplingInterval), resourceWeights: Float64Array.from(weights) };
    return this;
  }

  /**
   * Sets the last added ClusterQueue's `admissionFairSharing` flag.
   * @param {boolean} on
   */
  queueAdmissionFairSharing(on) {
    const cq = this.#raw.clusterQueues.at(-1);
    if (cq) cq.admissionFairSharing = on;
    return this;
  }

  /**
   * Sets a node's `fairWeight` (milli-units; 1000 by default).
   * @param {number} node
   * @param {Int} weight
   */
  fairWeight(node, weight) {
    this.#raw.nodes[node].fairWeight = BigInt(weight);
    return this;
  }

  /**
   * Adds a LocalQueue `namespace/name` (ids in the order added).
   * @param {string} namespace
   * @param {string} name
   * @param {number | undefined} clusterQueue
   * @param {Int} [fairWeight]
   */
  localQueue(namespace, name, clusterQueue, fairWeight = 1000n) {
    this.#raw.localQueues.push({ namespace, name, clusterQueue, fairWeight: BigInt(fairWeight) });
    return this;
  }

  /** @param {string} key */
  #key(key) {
    let i = this.#raw.annotationKeys.indexOf(key);
    if (i < 0) i = this.#raw.annotationKeys.push(key) - 1;
    return i;
  }

  /**
   * Adds an exposed annotation key (its index is the order of addition).
   * @param {string} key
   */
  annotationKey(key) {
    this.#key(key);
    return this;
  }

  /**
   * Sets an annotation on a flavor (adding the key if needed).
   * @param {number} flavor
   * @param {string} key
   * @param {string} value
   */
  flavorAnnotation(flavor, key, value) {
    this.#raw.flavors[flavor].annotations.push({ key: this.#key(key), value });
    return this;
  }

  /**
   * Sets an annotation on a node (adding the key if needed).
   * @param {number} node
   * @param {string} key
   * @param {string} value
   */
  nodeAnnotation(node, key, value) {
    this.#raw.nodes[node].annotations.push({ key: this.#key(key), value });
    return this;
  }

  /**
   * Adds a plugin setting (`pluginSettings.<plugin>.<key>`).
   * @param {string} key
   * @param {string} value
   */
  setting(key, value) {
    this.#raw.settings.push({ key, value });
    return this;
  }

  /**
   * @param {string} name
   * @param {import('wasq:policy/types@1.1.0').NodeKind} kind
   * @param {number | undefined} parent
   */
  #node(name, kind, parent) {
    this.#raw.nodes.push({ name, kind, parent, height: 0, fairWeight: 1000n, quotas: [], annotations: [] });
    this.#declared.push([]);
    return this;
  }

  /**
   * Adds a Cohort node.
   * @param {string} name
   * @param {number} [parent]
   */
  cohort(name, parent) {
    return this.#node(name, 'cohort', parent);
  }

  /**
   * Adds a ClusterQueue node and its ClusterQueue.
   * @param {string} name
   * @param {number} [parent]
   */
  clusterQueue(name, parent) {
    this.#raw.clusterQueues.push({
      name,
      node: this.#raw.nodes.length,
      preemption: kueue.defaultPreemption(),
      fungibility: kueue.defaultFungibility(),
      queueingStrategy: 'best-effort-fifo',
      resourceGroups: [],
      admissionFairSharing: false,
    });
    return this.#node(name, 'cluster-queue', parent);
  }

  /**
   * Declares a node's quota for a flavor-resource.
   * @param {number} node
   * @param {number} fr
   * @param {Int} nominal
   * @param {Int} [borrowingLimit]
   * @param {Int} [lendingLimit]
   */
  quota(node, fr, nominal, borrowingLimit, lendingLimit) {
    this.#declared[node].push({
      fr,
      nominal: BigInt(nominal),
      borrowingLimit: borrowingLimit === undefined ? undefined : BigInt(borrowingLimit),
      lendingLimit: lendingLimit === undefined ? undefined : BigInt(lendingLimit),
    });
    return this;
  }

  /**
   * Sets the last added ClusterQueue's `spec.preemption` (merged over Kueue's defaults).
   * @param {Partial<import('wasq:policy/types@1.1.0').PreemptionConfig>} config
   */
  preemption(config) {
    const cq = this.#raw.clusterQueues.at(-1);
    if (cq) cq.preemption = { ...cq.preemption, ...config };
    return this;
  }

  /**
   * Sets the last added ClusterQueue's `spec.flavorFungibility` (merged over Kueue's defaults).
   * @param {Partial<import('wasq:policy/types@1.1.0').Fungibility>} fungibility
   */
  fungibility(fungibility) {
    const cq = this.#raw.clusterQueues.at(-1);
    if (cq) cq.fungibility = { ...cq.fungibility, ...fungibility };
    return this;
  }

  /**
   * Adds a resource group to the last added ClusterQueue.
   * @param {readonly number[]} covered resource ids
   * @param {readonly number[]} flavors flavor ids, in order
   */
  resourceGroup(covered, flavors) {
    this.#raw.clusterQueues.at(-1)?.resourceGroups.push({ covered: Uint32Array.from(covered), flavors: Uint32Array.from(flavors) });
    return this;
  }

  /**
   * The catalog, with subtree and guaranteed quotas and heights derived as the host derives
   * them.
   * @returns {RawCatalog}
   */
  build() {
    const raw = copy(this.#raw);
    const n = raw.nodes.length;
    const width = Math.max(raw.flavorResources.length, ...this.#declared.flat().map((d) => d.fr + 1));
    const table = () => Array.from({ length: n }, () => new Array(width).fill(0n));
    const nominal = table();
    const subtree = table();
    const local = table();
    const declared = Array.from({ length: n }, () => new Array(width).fill(undefined));
    this.#declared.forEach((list, i) => {
      for (const d of list) {
        declared[i][d.fr] = d;
        nominal[i][d.fr] = d.nominal;
        subtree[i][d.fr] = d.nominal;
      }
    });
    const height = new Array(n).fill(0);
    /** @param {number} i */
    const depth = (i) => {
      let d = 0;
      for (let p = raw.nodes[i].parent; p !== undefined; p = raw.nodes[p].parent) d++;
      return d;
    };
    const order = [...raw.nodes.keys()].sort((a, b) => depth(b) - depth(a));
    for (const i of order) {
      for (let f = 0; f < width; f++) {
        const lending = declared[i][f]?.lendingLimit;
        local[i][f] = lending === undefined ? 0n : subtree[i][f] - lending > 0n ? subtree[i][f] - lending : 0n;
      }
      const p = raw.nodes[i].parent;
      if (p !== undefined) {
        for (let f = 0; f < width; f++) subtree[p][f] += subtree[i][f] - local[i][f];
        height[p] = Math.max(height[p], raw.nodes[i].kind === 'cohort' ? height[i] + 1 : 1);
      }
    }
    raw.nodes.forEach((/** @type {import('wasq:policy/types@1.1.0').Node} */ node, /** @type {number} */ i) => {
      node.height = height[i];
      node.quotas = [];
      for (let f = 0; f < width; f++) {
        if (declared[i][f] === undefined && subtree[i][f] === 0n) continue;
        node.quotas.push({
          fr: f,
          nominal: nominal[i][f],
          borrowingLimit: declared[i][f]?.borrowingLimit,
          lendingLimit: declared[i][f]?.lendingLimit,
          subtree: subtree[i][f],
          guaranteed: local[i][f],
        });
      }
    });
    return raw;
  }
}

// --- Workloads, heads, candidates -----------------------------------------------------------

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
export function workload(spec) {
  return { clusterQueue: 0, priority: 0n, created: 0n, requeueCount: 0, podSets: [{ count: 1, perPod: [] }], ...spec };
}

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
export function head(spec) {
  return { clusterQueue: 0, priority: 0n, created: 0n, secondPass: false, borrowingLevel: 0, requeueCount: 0, ...spec };
}

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
export function candidate(spec) {
  return { clusterQueue: 0, priority: 0n, created: 0n, admitted: 0n, requeueCount: 0, usage: [], kind: 'same-queue', evicting: false, ...spec };
}

/**
 * Amounts of flavor-resources from `[fr, amount]` pairs.
 * @param {ReadonlyArray<readonly [number, Int]>} pairs
 * @returns {FrAmount[]}
 */
export function amounts(pairs) {
  return pairs.map(([fr, amount]) => ({ fr, amount: BigInt(amount) }));
}

/**
 * One node's usage from `[fr, amount]` pairs: an entry of a preemption request's `usage` or of
 * a `tree-usage`.
 * @param {number} node
 * @param {ReadonlyArray<readonly [number, Int]>} pairs
 * @returns {NodeUsage}
 */
export function nodeUsage(node, pairs) {
  return { node, usage: amounts(pairs) };
}

// --- Topologies -----------------------------------------------------------------------------

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
export function topology(nodes) {
  const sorted = nodes.slice().sort((a, b) => {
    for (let l = 0; l < Math.max(a.path.length, b.path.length); l++) {
      const x = a.path[l] ?? '';
      const y = b.path[l] ?? '';
      if (x !== y) return x < y ? -1 : 1;
    }
    return 0;
  });
  /** @type {Array<{ level: number, parent: number | undefined, free: bigint[] }>} */
  const domains = [];
  /** @type {Array<{ domain: number, eligible: boolean }>} */
  const leaves = [];
  /** @type {string[][]} */
  const names = [];
  /** @type {Map<string, number>} */
  const byPath = new Map();
  for (const node of sorted) {
    /** @type {number | undefined} */
    let parent;
    node.path.forEach((_, level) => {
      const key = JSON.stringify(node.path.slice(0, level + 1));
      let d = byPath.get(key);
      if (d === undefined) {
        d = domains.push({ level, parent, free: node.free.map(() => 0n) }) - 1;
        names.push(node.path.slice(0, level + 1));
        byPath.set(key, d);
        if (level === node.path.length - 1) leaves.push({ domain: d, eligible: node.eligible ?? true });
      }
      const free = domains[d].free;
      node.free.forEach((f, c) => (free[c] += BigInt(f)));
      parent = d;
    });
  }
  return { domains, leaves, names };
}

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
export function checkPlacement(request, answer) {
  if (answer.tag !== 'placed') return undefined;
  const tree = request.tree;
  const { pods, leader } = answer.val;
  const seen = new Set();
  let placed = 0;
  for (const { leaf, count } of pods) {
    if (!(leaf >= 0 && leaf < tree.leafCount)) return `leaf ${leaf} out of range`;
    if (seen.has(leaf)) return `leaf ${leaf} given twice`;
    seen.add(leaf);
    if (count <= 0) return `leaf ${leaf} given ${count} pods`;
    const room = leader === leaf ? tree.fitsWithLeader(leaf) ?? -1 : tree.fitsOn(leaf).pods;
    if (!tree.eligible(leaf) || count > room) return `leaf ${leaf} cannot hold ${count} pods`;
    placed += count;
  }
  if (placed !== request.count) return `${placed} of ${request.count} pods placed`;
  if (leader !== undefined && request.leader === undefined) return 'a leader placed but none requested';
  if (leader === undefined && request.leader !== undefined) return 'the leader is not placed';
  if (leader !== undefined && (!(leader >= 0 && leader < tree.leafCount) || !tree.eligible(leader) || tree.fitsWithLeader(leader) === undefined)) {
    return `leaf ${leader} cannot hold the leader`;
  }
  const c = request.constraint;
  const used = pods.map((p) => p.leaf).concat(leader === undefined ? [] : [leader]);
  if (c.mode === 'required' && new Set(used.map((l) => tree.ancestorAt(tree.leafDomain(l), c.level))).size > 1) {
    return `pods span more than one ${request.levelNames[c.level]} domain`;
  }
  /** @type {Array<[number, number]>} */
  const layers = [[c.sliceLevel, Math.max(1, c.sliceSize)]];
  let prev = c.sliceLevel;
  for (const layer of c.layers) {
    if (layer.level <= prev) continue;
    for (let l = prev + 1; l <= layer.level; l++) layers.push([l, layer.size]);
    prev = layer.level;
  }
  for (const [level, size] of layers) {
    if (size <= 1) continue;
    /** @type {Map<number, number>} */
    const per = new Map();
    for (const { leaf, count } of pods) {
      const d = tree.ancestorAt(tree.leafDomain(leaf), level);
      per.set(d, (per.get(d) ?? 0) + count);
    }
    if ([...per.values()].some((n) => n % size !== 0)) return `a ${request.levelNames[level]} domain holds a partial slice of ${size}`;
  }
  return undefined;
}

// --- Simulated hosts ------------------------------------------------------------------------

/** The string table the host keeps for one plugin instance. */
class Interner {
  /** @type {Map<string, number>} */
  #ids = new Map();
  /** @type {string[]} */
  #pending = [];
  #first = 0;

  /** @param {string} value */
  id(value) {
    let id = this.#ids.get(value);
    if (id === undefined) {
      id = this.#ids.size;
      this.#ids.set(value, id);
      this.#pending.push(value);
    }
    return id;
  }

  /**
   * The strings added since the last call, as `new-strings`; `undefined` when none.
   * @returns {import('wasq:policy/types@1.1.0').NewStrings | undefined}
   */
  take() {
    if (this.#pending.length === 0) return undefined;
    const sent = { first: this.#first, values: this.#pending };
    this.#first += this.#pending.length;
    this.#pending = [];
    return sent;
  }

  /** Starts a new table: the next strings sent have `first` 0. */
  restart() {
    this.#ids.clear();
    this.#pending = [];
    this.#first = 0;
  }

  get size() {
    return this.#ids.size;
  }

  /** Every string of the table, by id. */
  all() {
    return [...this.#ids.keys()];
  }
}

/** What every simulated host shares: a string table, the needs the plugin answered. */
class SimulatedHost {
  /** @type {Required<Needs>} */
  needs = { treeUsage: false, localQueueUsage: false, identity: true, podSets: true };
  /** @type {Interner} */
  strings = new Interner();

  /** Set by `restartStrings`: the next call starts the tables of heads and rows again too. */
  #restartTables = false;

  /**
   * Starts a new string table (as the host does when its table grows too large): the next
   * call's strings start at 0, and the tables of heads and rows start again with it.
   */
  restartStrings() {
    this.strings.restart();
    this.#restartTables = true;
  }

  /** Whether this call starts the tables of heads and rows again (once per restart). */
  restartsTables() {
    const restart = this.#restartTables;
    this.#restartTables = false;
    return restart;
  }

  /**
   * The WIT identity of `who`, interning its strings.
   * @param {Who} who
   * @returns {import('wasq:policy/types@1.1.0').WorkloadIdentity}
   */
  identity(who) {
    const s = this.strings;
    const pairs = (/** @type {Record<string, string> | undefined} */ entries) =>
      Object.entries(entries ?? {}).map(([key, value]) => ({ key: s.id(key), value: s.id(value) }));
    return {
      namespace: s.id(who.namespace ?? 'default'),
      owner: who.owner && { kind: s.id(who.owner.kind), apiVersion: s.id(who.owner.apiVersion), name: s.id(who.owner.name) },
      labels: pairs(who.labels),
      annotations: pairs(who.annotations),
    };
  }

  /**
   * The WIT workload of a spec: identity and podSets only when sent (`always`: flavor
   * assignment and placement, which always carry them).
   * @param {WorkloadSpec} spec
   * @param {boolean} [always]
   * @returns {import('wasq:policy/types@1.1.0').Workload}
   */
  workload(spec, always = false) {
    const w = workload(spec);
    const created = big(w.created);
    return {
      id: w.id,
      identity: always || this.needs.identity ? this.identity(w) : undefined,
      clusterQueue: w.clusterQueue ?? 0,
      localQueue: w.localQueue,
      priority: big(w.priority),
      created,
      queued: big(w.queued, created),
      requeueCount: w.requeueCount ?? 0,
      requeueReason: w.requeueReason,
      podSets:
        always || this.needs.podSets
          ? (w.podSets ?? []).map((p) => ({
              count: p.count,
              minCount: p.minCount,
              perPod: (p.perPod ?? []).map((r) => ({ resource: r.resource, amount: BigInt(r.amount) })),
            }))
          : undefined,
    };
  }
}

/**
 * Wraps `target` into its exported interface when it is a policy instance rather than one.
 * @template T
 * @param {any} target
 * @param {(policy: any) => T} exportIt
 * @returns {T}
 */
function exported(target, exportIt) {
  return typeof target?.setCatalog === 'function' ? target : exportIt(target);
}

/**
 * Calls an ordering plugin as wasq does: `setCatalog`, then `sortKeys` and `orderHeads`
 * with the tables kept (a head crosses once while it waits under one key).
 */
export class OrderingHost extends SimulatedHost {
  /** @type {ReturnType<typeof exportOrdering>} */ plugin;
  /** @type {Map<string, number>} */ #heads = new Map();
  #headsSent = 0;

  /**
   * @param {ReturnType<typeof exportOrdering> | import('./ordering.js').OrderingPolicy} target
   *   the plugin's exported `ordering` interface, or a policy instance (exported here)
   */
  constructor(target) {
    super();
    this.plugin = exported(target, exportOrdering);
  }

  /**
   * Sends a catalog; returns (and keeps) the plugin's needs.
   * @param {RawCatalog} catalog
   */
  setCatalog(catalog) {
    this.needs = this.plugin.setCatalog(catalog);
    this.#heads.clear();
    this.#headsSent = 0;
    return this.needs;
  }

  /**
   * The keys of these workloads. `localQueueUsage` is sent when the plugin needs it.
   * @param {readonly WorkloadSpec[]} workloads
   * @param {{ localQueueUsage?: import('wasq:policy/types@1.1.0').LocalQueueUsage[], now?: Int }} [options]
   */
  sortKeys(workloads, { localQueueUsage = [], now = 0n } = {}) {
    const raw = workloads.map((w) => this.workload(w));
    const usage = this.needs.localQueueUsage ? localQueueUsage : [];
    return this.plugin.sortKeys(this.strings.take(), raw, usage, BigInt(now));
  }

  /**
   * The order of this cycle's heads, as workload handles. `treeUsage` (the cohort trees' usage)
   * and each head's `usage` are sent when the plugin needs `treeUsage`.
   * @param {readonly HeadSpec[]} heads
   * @param {{ treeUsage?: NodeUsage[], now?: Int }} [options]
   * @returns {number[]}
   */
  orderHeads(heads, { treeUsage = [], now = 0n } = {}) {
    if (this.restartsTables()) {
      this.#heads.clear();
      this.#headsSent = 0;
    }
    /** @type {import('wasq:policy/ordering@1.1.0').HeadInfo[]} */
    const added = [];
    const first = this.#headsSent;
    const ids = heads.map((spec) => {
      const h = head(spec);
      const created = big(h.created);
      const priority = big(h.priority);
      const key = h.key ? { primary: BigInt(h.key.primary), secondary: BigInt(h.key.secondary), tertiary: BigInt(h.key.tertiary) } : kueue.sortKeyWithPriority(priority, created);
      const info = {
        workload: h.workload,
        clusterQueue: h.clusterQueue ?? 0,
        localQueue: h.localQueue,
        priority,
        created,
        queued: big(h.queued, created),
        key,
        requeueCount: h.requeueCount ?? 0,
        requeueReason: h.requeueReason,
        identity: this.needs.identity ? this.identity(h) : undefined,
      };
      const tag = JSON.stringify([info.workload, info.queued, key], (_, v) => (typeof v === 'bigint' ? String(v) : v));
      let id = this.#heads.get(tag);
      if (id === undefined) {
        id = this.#headsSent + added.length;
        this.#heads.set(tag, id);
        added.push(info);
      }
      return id;
    });
    this.#headsSent += added.length;
    /** @type {import('wasq:policy/ordering@1.1.0').HeadGroup[]} */
    const groups = [];
    heads.forEach((spec, i) => {
      const secondPass = spec.secondPass ?? false;
      const borrowingLevel = spec.borrowingLevel ?? 0;
      let g = groups.find((g) => g.secondPass === secondPass && g.borrowingLevel === borrowingLevel);
      if (!g) groups.push((g = { secondPass, borrowingLevel, heads: new Uint32Array(0) }));
      g.heads = Uint32Array.from([...g.heads, ids[i]]);
    });
    const withUsage = this.needs.treeUsage;
    return Array.from(
      this.plugin.orderHeads(
        this.strings.take(),
        added.length ? { first, heads: added } : undefined,
        Uint32Array.from(ids),
        groups,
        withUsage ? heads.map((h, i) => ({ head: ids[i], usage: amounts((h.usage ?? []).map((u) => [u.fr, u.amount])) })) : undefined,
        withUsage ? treeUsage : undefined,
        BigInt(now),
      ),
    );
  }
}

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
export class PreemptionHost extends SimulatedHost {
  /** @type {ReturnType<typeof exportPreemption>} */ plugin;
  /** @type {Map<string, number>} */ #rows = new Map();
  #rowsSent = 0;
  #keepUsage;
  /** @type {Map<number, Map<number, bigint>>} what the instance holds, per node and flavor-resource */
  #held = new Map();

  /**
   * @param {ReturnType<typeof exportPreemption> | import('./preemption.js').PreemptionPolicy} target
   *   the plugin's exported `preemption` interface, or a policy instance (exported here)
   * @param {{ keepUsage?: boolean }} [options]
   */
  constructor(target, { keepUsage = false } = {}) {
    super();
    this.plugin = exported(target, exportPreemption);
    this.#keepUsage = keepUsage;
  }

  /**
   * Sends a catalog; returns (and keeps) the plugin's needs.
   * @param {RawCatalog} catalog
   */
  setCatalog(catalog) {
    this.needs = this.plugin.setCatalog(catalog);
    this.#rows.clear();
    this.#rowsSent = 0;
    this.#held.clear();
    return this.needs;
  }

  /**
   * The answers to these requests, in one call.
   * @param {readonly PreemptionRequestSpec[]} requests
   * @returns {import('./preemption.js').Answer[]}
   */
  selectVictims(requests) {
    if (this.restartsTables()) {
      this.#rows.clear();
      this.#rowsSent = 0;
    }
    /** @type {import('wasq:policy/preemption@1.1.0').AdmittedRow[]} */
    const added = [];
    const first = this.#rowsSent;
    const raw = requests.map((spec) => {
      const reqs = amounts(spec.requests.map((r) => [r.fr, r.amount]));
      const candidates = (spec.candidates ?? []).map(candidate);
      const rows = candidates.map((c) => {
        const created = big(c.created);
        const admitted = big(c.admitted);
        const tag = JSON.stringify([c.workload, String(admitted)]);
        let row = this.#rows.get(tag);
        if (row === undefined) {
          row = this.#rowsSent + added.length;
          this.#rows.set(tag, row);
          added.push({
            workload: c.workload,
            clusterQueue: c.clusterQueue ?? 0,
            localQueue: c.localQueue,
            priority: big(c.priority),
            created,
            admitted,
            requeueCount: c.requeueCount ?? 0,
            requeueReason: c.requeueReason,
            usage: amounts((c.usage ?? []).map((u) => [u.fr, u.amount])),
            identity: this.needs.identity ? this.identity(c) : undefined,
          });
        }
        return row;
      });
      this.#rowsSent = first + added.length;
      /** @type {import('wasq:policy/preemption@1.1.0').CandidateGroup[]} */
      const groups = [];
      candidates.forEach((c, i) => {
        const kind = c.kind ?? 'same-queue';
        const evicting = c.evicting ?? false;
        let g = groups.find((g) => g.kind === kind && g.lca === c.lca && g.evicting === evicting);
        if (!g) groups.push((g = { kind, lca: c.lca, evicting, rows: new Uint32Array(0) }));
        g.rows = Uint32Array.from([...g.rows, rows[i]]);
      });
      /** @type {Map<number, number>} */
      const shares = new Map();
      for (const c of candidates) {
        if (c.localQueue !== undefined && c.localQueueUsage !== undefined) shares.set(c.localQueue, c.localQueueUsage);
      }
      return {
        preemptor: this.workload(spec.preemptor),
        requests: reqs,
        needsPreemption: Uint32Array.from(spec.needsPreemption ?? reqs.map((r) => r.fr)),
        candidates: Uint32Array.from(rows),
        groups,
        localQueueUsage: [...shares].map(([localQueue, weighted]) => ({ localQueue, weighted })),
        usageKept: this.#keepUsage,
        usage: this.#keepUsage ? this.#changed(spec.usage ?? [], reqs) : (spec.usage ?? []),
        treeUsage: this.needs.treeUsage ? (spec.treeUsage ?? []) : undefined,
        now: big(spec.now),
      };
    });
    return this.plugin.selectVictims(this.strings.take(), added.length ? { first, rows: added } : undefined, raw);
  }

  /**
   * The entries of `usage` whose figures for the requests' flavor-resources differ from what
   * the instance holds; remembers them as held.
   * @param {readonly NodeUsage[]} usage
   * @param {readonly FrAmount[]} requests
   */
  #changed(usage, requests) {
    const frs = requests.map((r) => r.fr);
    return usage.filter((entry) => {
      const now = new Map(Array.from(entry.usage, (u) => [u.fr, BigInt(u.amount)]));
      const held = this.#held.get(entry.node);
      const same = held !== undefined && frs.every((fr) => (held.get(fr) ?? 0n) === (now.get(fr) ?? 0n));
      if (same) return false;
      const next = held ?? new Map();
      for (const fr of frs) next.set(fr, now.get(fr) ?? 0n);
      this.#held.set(entry.node, next);
      return true;
    });
  }
}

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
export class FlavorAssignmentHost extends SimulatedHost {
  /** @type {ReturnType<typeof exportFlavorAssignment>} */ plugin;

  /**
   * @param {ReturnType<typeof exportFlavorAssignment> | import('./flavor-assignment.js').FlavorAssignmentPolicy} target
   */
  constructor(target) {
    super();
    this.plugin = exported(target, exportFlavorAssignment);
  }

  /** @param {RawCatalog} catalog */
  setCatalog(catalog) {
    this.plugin.setCatalog(catalog);
  }

  /**
   * @param {readonly FlavorRequestSpec[]} requests
   * @returns {Array<number | undefined>}
   */
  chooseFlavors(requests) {
    const raw = requests.map((r) => ({
      workload: this.workload(r.workload, true),
      podSet: r.podSet ?? 0,
      requests: (r.requests ?? []).map((a) => ({ resource: a.resource, amount: BigInt(a.amount) })),
      options: r.options,
      now: big(r.now),
    }));
    return this.plugin.chooseFlavors(this.strings.take(), raw);
  }
}

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
export class PlacementHost extends SimulatedHost {
  /** @type {ReturnType<typeof exportPlacement>} */ plugin;
  /** @type {import('wasq:policy/placement@1.1.0').Request[]} The requests of the last call, as sent. */ sent = [];

  /**
   * @param {ReturnType<typeof exportPlacement> | import('./placement.js').PlacementPolicy} target
   */
  constructor(target) {
    super();
    this.plugin = exported(target, exportPlacement);
  }

  /** @type {RawCatalog | undefined} */
  #catalog;

  /** @param {RawCatalog} catalog */
  setCatalog(catalog) {
    this.#catalog = catalog;
    this.plugin.setCatalog(catalog);
  }

  /**
   * Why the host would refuse each of these answers to the requests of the last `place` call
   * (`checkPlacement`); `undefined` for an answer it accepts.
   * @param {readonly import('./placement.js').Answer[]} answers
   * @returns {Array<string | undefined>}
   */
  check(answers) {
    const strings = new StringTable();
    strings.add({ first: 0, values: this.strings.all() });
    const catalog = this.#catalog ? new Catalog(this.#catalog, strings) : Catalog.empty(strings);
    return answers.map((answer, i) => checkPlacement(new PlacementRequest(catalog, this.sent[i]), answer));
  }

  /**
   * @param {readonly PlacementRequestSpec[]} requests
   * @returns {import('./placement.js').Answer[]}
   */
  place(requests) {
    this.sent = requests.map((r) => {
      const lowest = Math.max(0, r.levelNames.length - 1);
      return {
        workload: this.workload(r.workload, true),
        podSet: r.podSet ?? 0,
        flavor: r.flavor ?? 0,
        topology: this.strings.id(r.topology ?? 'default'),
        levelNames: Uint32Array.from(r.levelNames, (n) => this.strings.id(n)),
        resourceNames: Uint32Array.from(r.resourceNames, (n) => this.strings.id(n)),
        count: r.count,
        perPod: BigInt64Array.from(r.perPod, (v) => BigInt(v)),
        leader: r.leader ? BigInt64Array.from(r.leader, (v) => BigInt(v)) : undefined,
        constraint: { level: lowest, mode: 'unconstrained', sliceLevel: lowest, sliceSize: 1, layers: [], ...r.constraint },
        domains: r.domains.map((d) => ({ level: d.level, parent: d.parent, free: BigInt64Array.from(d.free, (v) => BigInt(v)) })),
        leaves: r.leaves.map((l) => ({ domain: l.domain, eligible: l.eligible })),
        now: big(r.now),
      };
    });
    return this.plugin.place(this.strings.take(), this.sent);
  }
}

// --- Dispatch (MultiKueue) ------------------------------------------------------------------

/**
 * A worker cluster as a test writes it: connected unless said otherwise, labels as an object,
 * times as BigInts or numbers.
 * @typedef {object} ClusterSpec
 * @property {string} name
 * @property {boolean} [connected] default `true`
 * @property {Record<string, string>} [labels]
 * @property {Int} [lostSince]
 * @property {{ name?: string, pending?: number, admitted?: number, resources?: Array<{ flavor: string, resource: string, nominal: Int, usage: Int }> }} [queue]
 * @property {Int} [copySince]
 */

/**
 * A dispatch request as a test writes it: the workload `ns/w` of LocalQueue `lq`, priority 0,
 * created and reserved at 0, without podSets or labels, nothing nominated, unless `spec` says
 * otherwise (podSets' per-pod requests as objects of milli-units).
 * @typedef {object} DispatchRequestSpec
 * @property {Int} [now]
 * @property {{ namespace?: string, name?: string, localQueue?: string, priority?: number, created?: Int, reserved?: Int, podSets?: Array<{ name?: string, count: number, perPod?: Record<string, Int> }>, labels?: Record<string, string> }} [workload]
 * @property {Array<ClusterSpec | string>} clusters a bare name is a connected cluster
 * @property {number[]} [nominated]
 * @property {Int} [lastNominated]
 */

/**
 * Labels in key order, as the host sends them.
 * @param {Record<string, string> | undefined} labels
 */
const sortedLabels = (labels) =>
  Object.entries(labels ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => ({ key, value }));

/**
 * The WIT `dispatch.request` of a spec, as the host sends it.
 * @param {DispatchRequestSpec} spec
 * @returns {import('wasq:policy/dispatch@1.1.0').Request}
 */
export function rawDispatchRequest(spec) {
  const w = spec.workload ?? {};
  return {
    now: big(spec.now),
    workload: {
      namespace: w.namespace ?? 'ns',
      name: w.name ?? 'w',
      localQueue: w.localQueue ?? 'lq',
      priority: w.priority ?? 0,
      created: big(w.created),
      reserved: big(w.reserved),
      podSets: (w.podSets ?? []).map((p, i) => ({
        name: p.name ?? (i === 0 ? 'main' : `podset-${i}`),
        count: p.count,
        perPod: Object.entries(p.perPod ?? {})
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([name, amount]) => ({ name, amount: BigInt(amount) })),
      })),
      labels: sortedLabels(w.labels),
    },
    clusters: spec.clusters.map((c) => {
      const cluster = typeof c === 'string' ? { name: c } : c;
      return {
        name: cluster.name,
        labels: sortedLabels(cluster.labels),
        connected: cluster.connected ?? true,
        lostSince: cluster.lostSince === undefined ? undefined : BigInt(cluster.lostSince),
        queue: cluster.queue && {
          name: cluster.queue.name ?? 'cq',
          pending: cluster.queue.pending ?? 0,
          admitted: cluster.queue.admitted ?? 0,
          resources: (cluster.queue.resources ?? []).map((r) => ({ flavor: r.flavor, resource: r.resource, nominal: BigInt(r.nominal), usage: BigInt(r.usage) })),
        },
        copySince: cluster.copySince === undefined ? undefined : BigInt(cluster.copySince),
      };
    }),
    nominated: Uint32Array.from(spec.nominated ?? []),
    lastNominated: spec.lastNominated === undefined ? undefined : BigInt(spec.lastNominated),
  };
}

/**
 * The request view a dispatch policy receives, from a spec: to call `policy.dispatch(settings,
 * dispatchRequest({...}))` directly.
 * @param {DispatchRequestSpec} spec
 * @returns {DispatchRequest}
 */
export function dispatchRequest(spec) {
  return new DispatchRequest(rawDispatchRequest(spec));
}

/** Kueue's limit on `nominatedClusterNames`: the most nominees an answer may have. */
export const MAX_NOMINEES = 20;

/**
 * Checks a dispatch answer as the host does (`src/policy/dispatch.rs`, `verify`): at most 20
 * nominees, each a cluster of the request, named once, connected unless already nominated;
 * `retryAfter` positive when present. Returns why the host would refuse it, or `undefined`.
 * @param {DispatchRequest} request
 * @param {import('./dispatch.js').Answer} answer
 * @returns {string | undefined}
 */
export function checkDispatch(request, answer) {
  const nominees = Array.from(answer.nominate);
  if (nominees.length > MAX_NOMINEES) return `nominates ${nominees.length} clusters, more than ${MAX_NOMINEES}`;
  const seen = new Set();
  for (const i of nominees) {
    const c = request.clusters[i];
    if (c === undefined) return `nominates cluster ${i}, but the request has ${request.clusters.length}`;
    if (seen.has(i)) return `nominates ${c.name} twice`;
    seen.add(i);
    if (!c.raw.connected && !request.nominated.includes(i)) return `nominates ${c.name}, which is not connected`;
  }
  if (answer.retryAfter !== undefined && answer.retryAfter <= 0n) return 'asks to be asked again after a time that is not positive';
  return undefined;
}

/**
 * Calls a dispatch plugin as wasq does: `setSettings` once (the host does it before the
 * instance's first `dispatch`; an empty list when none are configured), then `dispatch`.
 */
export class DispatchHost {
  /** @type {ReturnType<typeof exportDispatch>} */ plugin;
  /** @type {import('wasq:policy/dispatch@1.1.0').Request[]} The requests of the last call, as sent. */ sent = [];
  #settled = false;

  /**
   * @param {ReturnType<typeof exportDispatch> | import('./dispatch.js').DispatchPolicy} target
   *   the plugin's exported interface, or a policy instance (exported for you)
   */
  constructor(target) {
    const t = /** @type {any} */ (target);
    this.plugin = typeof t?.setSettings === 'function' ? t : exportDispatch(t);
  }

  /**
   * Sends the plugin's settings (an object, or `[key, value]` pairs).
   * @param {Record<string, string> | Iterable<[string, string]>} settings
   */
  setSettings(settings) {
    const pairs = Symbol.iterator in settings ? Array.from(/** @type {Iterable<[string, string]>} */ (settings)) : Object.entries(settings);
    this.plugin.setSettings(pairs.map(([key, value]) => ({ key, value })));
    this.#settled = true;
  }

  /**
   * @param {readonly DispatchRequestSpec[]} requests
   * @returns {import('./dispatch.js').Answer[]}
   */
  dispatch(requests) {
    if (!this.#settled) this.setSettings({});
    this.sent = requests.map(rawDispatchRequest);
    return this.plugin.dispatch(this.sent);
  }

  /**
   * Why the host would refuse each of these answers to the requests of the last `dispatch`
   * call (`checkDispatch`); `undefined` for an answer it accepts.
   * @param {readonly import('./dispatch.js').Answer[]} answers
   * @returns {Array<string | undefined>}
   */
  check(answers) {
    return answers.map((answer, i) => checkDispatch(new DispatchRequest(this.sent[i]), answer));
  }
}
