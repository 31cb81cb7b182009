// Placement policies (topology-aware scheduling): a class with `place(catalog, request)` (and
// optionally `catalogChanged(catalog)`), exported with
// `export const placement = exportPlacement(new MyPolicy())`.
//
// The host sends a TAS podSet's flavor's domain tree (`request.domains`: level, parent, free
// capacity per resource; `request.leaves`: domain, eligibility); `request.tree` reads it. The
// policy answers pods per leaf (`placed(...)`) or why they do not fit (`noFit(message)`); the
// host checks the answer and falls back to Kueue's BestFit when it refuses one. There is no
// "Kueue's placement" answer in the contract, and this SDK does not carry BestFit: a policy
// places every request it receives itself (`Tree.fill` places any count that fits in given
// domains, keeping slices and slice layers whole).

import { checkIndex, checkPolicy, PluginState, reported } from './export.js';
import { Workload } from './identity.js';
import { resolve } from './strings.js';

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
export const UNLIMITED_PODS = 2147483647;

/**
 * Places the pods: pods per leaf and, with a podSet group's leader, the leader's leaf.
 * @param {Iterable<LeafPods>} pods
 * @param {number} [leader]
 * @returns {Answer}
 */
export function placed(pods, leader) {
  return { tag: 'placed', val: { pods: Array.from(pods, (p) => ({ leaf: p.leaf, count: p.count })), leader } };
}

/**
 * The podSet does not fit: `message` becomes the workload's pending message (the host
 * prefixes the podSet and appends its count of excluded nodes).
 * @param {string} message
 * @returns {Answer}
 */
export function noFit(message) {
  return { tag: 'no-fit', val: String(message) };
}

/**
 * Checks an answer's form (the host checks the placement itself).
 * @param {unknown} answer
 * @param {RawRequest} request
 * @returns {Answer}
 */
function checkAnswer(answer, request) {
  const a = /** @type {{ tag?: unknown, val?: any }} */ (answer ?? {});
  if (a.tag === 'no-fit') return noFit(a.val);
  if (a.tag !== 'placed' || a.val === null || typeof a.val !== 'object') {
    throw new TypeError(`place must return placed(pods, leader) or noFit(message); got ${String(answer)}`);
  }
  const leaves = request.leaves.length;
  const pods = Array.from(/** @type {Iterable<any>} */ (a.val.pods ?? []), (p) => {
    const count = p?.count;
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 0xffffffff) {
      throw new RangeError(`placed: leaf ${p?.leaf} given ${count} pods (at least 1)`);
    }
    return { leaf: checkIndex(p.leaf, leaves, `the ${leaves} leaves`), count };
  });
  const leader = a.val.leader ?? undefined;
  if (leader !== undefined) checkIndex(leader, leaves, `the ${leaves} leaves`);
  return { tag: 'placed', val: { pods, leader } };
}

/**
 * One TAS podSet to place (`placement.request`), its names resolved.
 */
export class Request {
  /** @type {Workload} The workload the podSet belongs to (identity and podSets always sent). */ workload;
  /** @type {number} The podSet: an index into `workload.podSets`. */ podSet;
  /** @type {number} The TAS ResourceFlavor assigned to the podSet. */ flavor;
  /** @type {string} The flavor's Topology's name. */ topology;
  /** @type {string[]} The Topology's level labels, highest first (…, `kubernetes.io/hostname`). */ levelNames;
  /** @type {string[]} The capacity columns' resource names, `pods` first. */ resourceNames;
  /** @type {number} Pods to place. */ count;
  /** @type {bigint[]} One pod's request per resource column, in milli-units (`pods` is 1000). */ perPod;
  /** @type {bigint[] | undefined} A podSet group's leader: its one pod's request per column. */ leader;
  /** @type {Constraint} What the podSet's topology request asks (levels index `levelNames`). */ constraint;
  /**
   * @type {Array<{ level: number, parent: number | undefined, free: bigint[] }>} The flavor's
   * domain tree, depth first in the order of label values: each domain's level, parent and free
   * capacity per resource column.
   */
  domains;
  /** @type {Leaf[]} Its leaves; answers name leaves by their index here. */ leaves;
  /** @type {bigint} The scheduler's clock at this decision (ms). */ now;
  /** @type {RawRequest} The request as the host sent it. */ raw;
  /** @type {Tree | undefined} */ #tree;

  /**
   * @param {Catalog} catalog
   * @param {RawRequest} raw
   */
  constructor(catalog, raw) {
    const strings = catalog.strings.values;
    this.raw = raw;
    this.workload = new Workload(catalog, raw.workload);
    this.podSet = raw.podSet;
    this.flavor = raw.flavor;
    this.topology = resolve(strings, raw.topology);
    this.levelNames = Array.from(raw.levelNames, (id) => resolve(strings, id));
    this.resourceNames = Array.from(raw.resourceNames, (id) => resolve(strings, id));
    this.count = raw.count;
    this.perPod = Array.from(raw.perPod);
    this.leader = raw.leader ? Array.from(raw.leader) : undefined;
    this.constraint = { ...raw.constraint, layers: Array.from(raw.constraint.layers) };
    this.domains = Array.from(raw.domains, (d) => ({ level: d.level, parent: d.parent ?? undefined, free: Array.from(d.free) }));
    this.leaves = Array.from(raw.leaves);
    this.now = raw.now;
  }

  /** The domain tree, read (built on first use). */
  get tree() {
    this.#tree ??= new Tree(this);
    return this.#tree;
  }
}

/**
 * How many pods of `perPod` fit in `free` (per resource), and the resource column that limits
 * it first (`undefined` when the pods request nothing).
 * @param {readonly bigint[]} perPod
 * @param {(column: number) => bigint} free
 * @returns {{ pods: number, limitedBy: number | undefined }}
 */
function fitting(perPod, free) {
  /** @type {bigint | undefined} */
  let best;
  /** @type {number | undefined} */
  let limitedBy;
  perPod.forEach((need, c) => {
    if (need <= 0n) return;
    const f = free(c);
    const n = (f > 0n ? f : 0n) / need;
    if (best === undefined || n < best) {
      best = n;
      limitedBy = c;
    }
  });
  if (best === undefined) return { pods: UNLIMITED_PODS, limitedBy: undefined };
  return { pods: best > BigInt(UNLIMITED_PODS) ? UNLIMITED_PODS : Number(best), limitedBy };
}

/**
 * A request's domain tree, with what its lists leave implicit: each domain's children and
 * leaf, each level's domains, how many pods fit where — and `fill`, a placement of any count
 * that fits in given domains.
 */
export class Tree {
  /** @type {Request} */ #req;
  /** @type {number[][]} */ #children;
  /** @type {number[][]} */ #perLevel;
  /** @type {Array<number | undefined>} */ #leafOf;
  /** @type {number[]} pods per domain must be a multiple of this, by level */ #granule;
  /** @type {number[] | undefined} */ #capacity;

  /** @param {Request} request */
  constructor(request) {
    this.#req = request;
    const n = request.domains.length;
    this.#children = Array.from({ length: n }, () => []);
    this.#perLevel = Array.from({ length: request.levelNames.length }, () => []);
    request.domains.forEach((d, i) => {
      if (d.parent !== undefined && d.parent < n) this.#children[d.parent].push(i);
      this.#perLevel[d.level]?.push(i);
    });
    this.#leafOf = new Array(n).fill(undefined);
    request.leaves.forEach((l, leaf) => {
      if (l.domain < n) this.#leafOf[l.domain] = leaf;
    });
    this.#granule = granules(request.constraint, request.levelNames.length);
  }

  /** The request this view reads. */
  get request() {
    return this.#req;
  }

  /** How many levels the topology has (0 = the highest). */
  get levels() {
    return this.#req.levelNames.length;
  }

  /** The lowest level: the leaves'. */
  get lowest() {
    return Math.max(0, this.levels - 1);
  }

  /** How many domains the tree has. */
  get size() {
    return this.#req.domains.length;
  }

  /**
   * A domain's level.
   * @param {number} d
   */
  level(d) {
    return this.#req.domains[d].level;
  }

  /**
   * A domain's parent; `undefined` at the highest level.
   * @param {number} d
   * @returns {number | undefined}
   */
  parent(d) {
    return this.#req.domains[d].parent;
  }

  /**
   * A domain's children, in the order of their values.
   * @param {number} d
   * @returns {readonly number[]}
   */
  children(d) {
    return this.#children[d] ?? [];
  }

  /**
   * The domains of a level, in the order of their values.
   * @param {number} level
   * @returns {readonly number[]}
   */
  atLevel(level) {
    return this.#perLevel[level] ?? [];
  }

  /**
   * The ancestor of `d` at `level` (`d` itself at its own level or above).
   * @param {number} d
   * @param {number} level
   */
  ancestorAt(d, level) {
    let at = d;
    while (this.level(at) > level) {
      const p = this.parent(at);
      if (p === undefined) break;
      at = p;
    }
    return at;
  }

  /**
   * A domain's free capacity of a resource column (milli-units): a leaf's own, an inner
   * domain's the sum of its leaves'.
   * @param {number} column an index into `request.resourceNames`
   * @param {number} d
   * @returns {bigint}
   */
  free(column, d) {
    return this.#req.domains[d].free[column] ?? 0n;
  }

  /**
   * The column of a resource, by name (`pods`, `cpu`, `nvidia.com/gpu`, …).
   * @param {string} name
   * @returns {number | undefined}
   */
  column(name) {
    const i = this.#req.resourceNames.indexOf(name);
    return i < 0 ? undefined : i;
  }

  /** How many leaves the tree has. */
  get leafCount() {
    return this.#req.leaves.length;
  }

  /**
   * A leaf's domain.
   * @param {number} leaf
   */
  leafDomain(leaf) {
    return this.#req.leaves[leaf].domain;
  }

  /**
   * The leaf a lowest-level domain is.
   * @param {number} d
   * @returns {number | undefined}
   */
  leafOf(d) {
    return this.#leafOf[d];
  }

  /**
   * Whether the pods may run on a leaf.
   * @param {number} leaf
   */
  eligible(leaf) {
    return this.#req.leaves[leaf].eligible;
  }

  /**
   * How many pods fit on a leaf's free capacity (eligibility aside), and the column that
   * limits it first.
   * @param {number} leaf
   */
  fitsOn(leaf) {
    const d = this.leafDomain(leaf);
    return fitting(this.#req.perPod, (c) => this.free(c, d));
  }

  /**
   * With a podSet group's leader: `undefined` when the leader does not fit on the leaf, else
   * how many pods fit next to it. `undefined` without a leader.
   * @param {number} leaf
   * @returns {number | undefined}
   */
  fitsWithLeader(leaf) {
    const leader = this.#req.leader;
    if (leader === undefined) return undefined;
    const d = this.leafDomain(leaf);
    if (fitting(leader, (c) => this.free(c, d)).pods < 1) return undefined;
    return fitting(this.#req.perPod, (c) => this.free(c, d) - (leader[c] ?? 0n)).pods;
  }

  /**
   * The pods that fit on a domain's eligible leaves, each leaf on its own.
   * @param {number} d
   * @returns {number}
   */
  podsFitting(d) {
    const leaf = this.#leafOf[d];
    if (leaf !== undefined) return this.eligible(leaf) ? this.fitsOn(leaf).pods : 0;
    return this.children(d).reduce((sum, c) => sum + this.podsFitting(c), 0);
  }

  /**
   * The pods a domain can hold in an answer the host accepts: on its eligible leaves, and a
   * multiple of the slice size within each slice domain (and of each further slice layer's size
   * within its domains). The leader is not counted (see `fill`).
   * @param {number} d
   * @returns {number}
   */
  capacity(d) {
    this.#capacity ??= this.#capacities();
    return this.#capacity[d] ?? 0;
  }

  /** Every domain's capacity, children before parents. */
  #capacities() {
    const cap = new Array(this.size).fill(0);
    // Deepest level first: every child is done before its parent.
    for (let level = this.levels - 1; level >= 0; level--) {
      for (const d of this.atLevel(level)) cap[d] = this.#roundDown(d, this.#own(d, undefined, cap));
    }
    return cap;
  }

  /**
   * What `d` holds before rounding: a leaf's pods (next to the leader on `leaderLeaf`), an inner
   * domain's children's capacities.
   * @param {number} d
   * @param {number | undefined} leaderLeaf
   * @param {readonly number[]} cap
   */
  #own(d, leaderLeaf, cap) {
    const leaf = this.#leafOf[d];
    if (leaf === undefined) return this.children(d).reduce((sum, c) => sum + cap[c], 0);
    if (!this.eligible(leaf)) return 0;
    return leaf === leaderLeaf ? this.fitsWithLeader(leaf) ?? 0 : this.fitsOn(leaf).pods;
  }

  /** @param {number} d @param {number} pods */
  #roundDown(d, pods) {
    const g = this.#granule[this.level(d)] ?? 1;
    return pods - (pods % g);
  }

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
  fill(domains, count = this.#req.count) {
    const roots = typeof domains === 'number' ? [domains] : Array.from(domains);
    const base = this.#capacity ?? (this.#capacity = this.#capacities());
    if (this.#req.leader === undefined) {
      return this.#fillWith(roots, count, base, undefined);
    }
    // Try leaves for the leader in order, each time with that leaf's capacity reduced to the
    // pods that fit next to it (and its ancestors' capacities recomputed).
    for (const root of roots) {
      for (const leaf of this.#leavesUnder(root)) {
        if (!this.eligible(leaf) || this.fitsWithLeader(leaf) === undefined) continue;
        const cap = this.#withLeader(base, leaf);
        const placement = this.#fillWith(roots, count, cap, leaf);
        if (placement) return placement;
      }
    }
    return undefined;
  }

  /**
   * Capacities with the leader on `leaf`: its path to the root recomputed.
   * @param {readonly number[]} base
   * @param {number} leaf
   */
  #withLeader(base, leaf) {
    const cap = base.slice();
    /** @type {number | undefined} */
    let d = this.leafDomain(leaf);
    for (let steps = 0; d !== undefined && steps <= this.size; steps++) {
      cap[d] = this.#roundDown(d, this.#own(d, leaf, cap));
      d = this.parent(d);
    }
    return cap;
  }

  /**
   * The leaves under a domain, in index order.
   * @param {number} d
   * @returns {number[]}
   */
  #leavesUnder(d) {
    const out = [];
    const stack = [d];
    while (stack.length) {
      const at = /** @type {number} */ (stack.pop());
      const leaf = this.#leafOf[at];
      if (leaf !== undefined) out.push(leaf);
      const kids = this.children(at);
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
    }
    return out.sort((a, b) => a - b);
  }

  /**
   * @param {readonly number[]} roots
   * @param {number} count
   * @param {readonly number[]} cap
   * @param {number | undefined} leader
   * @returns {Placement | undefined}
   */
  #fillWith(roots, count, cap, leader) {
    const total = roots.reduce((sum, d) => sum + (cap[d] ?? 0), 0);
    if (total < count) return undefined;
    /** @type {LeafPods[]} */
    const pods = [];
    let left = count;
    /** @type {(d: number, n: number) => void} */
    const put = (d, n) => {
      const leaf = this.#leafOf[d];
      if (leaf !== undefined) {
        if (n > 0) pods.push({ leaf, count: n });
        return;
      }
      let rest = n;
      for (const c of this.children(d)) {
        if (rest === 0) break;
        const take = Math.min(rest, cap[c]);
        put(c, take);
        rest -= take;
      }
    };
    for (const d of roots) {
      if (left === 0) break;
      const take = Math.min(left, cap[d] ?? 0);
      put(d, take);
      left -= take;
    }
    if (left !== 0) return undefined;
    pods.sort((a, b) => a.leaf - b.leaf);
    return { pods, leader };
  }
}

/**
 * Pods per domain must be a multiple of this, by level: the slice size down to the slice level,
 * then each further layer's size from the level below the previous layer's down to its own
 * (Kueue's `sliceSizeAtLevel`), then 1.
 * @param {Constraint} c
 * @param {number} levels
 * @returns {number[]}
 */
function granules(c, levels) {
  const size = Math.max(1, c.sliceSize);
  const g = Array.from({ length: levels }, (_, l) => (l <= c.sliceLevel ? size : 1));
  let prev = c.sliceLevel;
  for (const layer of c.layers) {
    if (layer.level <= prev || layer.level >= levels) continue;
    for (let l = prev + 1; l <= layer.level; l++) g[l] = Math.max(1, layer.size);
    prev = layer.level;
  }
  return g;
}

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
export function exportPlacement(policy) {
  checkPolicy(policy, 'placement', ['place'], ['catalogChanged']);
  const state = new PluginState();
  return {
    /** @param {import('wasq:policy/types@1.1.0').Catalog} catalog */
    setCatalog(catalog) {
      reported('set-catalog', () => {
        state.setCatalog(catalog);
        policy.catalogChanged?.(state.catalog);
      });
    },
    /**
     * @param {import('wasq:policy/types@1.1.0').NewStrings | undefined} strings
     * @param {RawRequest[]} requests
     * @returns {Answer[]}
     */
    place(strings, requests) {
      return reported('place', () => {
        state.strings.add(strings);
        const catalog = state.catalog;
        return Array.from(requests, (raw) => checkAnswer(policy.place(catalog, new Request(catalog, raw)), raw));
      });
    },
  };
}
