// Quota usage: what a preemption instance keeps between requests (`request.usage-kept`), and
// `QuotaView`, Kueue's quota arithmetic over the catalog's quota tree and a usage, so that a
// policy can simulate removing (or adding) workloads and ask whether one fits.
//
// The formulas are Kueue's (`pkg/cache/scheduler/resource_node.go`), as the host and the Rust
// SDK compute them:
// - `localAvailable(n) = max(0, guaranteed − usage)`
// - `available(n)`: a root → `subtree − usage`; otherwise `localAvailable + min(available(parent),
//   subtree − guaranteed − max(0, usage − guaranteed) + borrowingLimit)` (no `min` without a
//   borrowing limit); the result clamped at 0
// - adding usage at a node bubbles to its parent only the part above its guaranteed quota
// - a ClusterQueue borrows when its usage exceeds its nominal quota; a Cohort when its usage
//   exceeds its subtree quota.
// Quantities are BigInt milli-units, so nothing rounds (and nothing saturates: no figure comes
// near 2^63).

/** @typedef {import('./catalog.js').Catalog} Catalog */
/** @typedef {import('wasq:policy/types@1.1.0').NodeUsage} NodeUsage */
/** @typedef {import('wasq:policy/types@1.1.0').FrAmount} FrAmount */

/**
 * The usage a preemption instance received, by node and flavor-resource of its catalog: every
 * request's `usage` is filed here as it arrives (before the policy sees the request) when the
 * request says `usageKept`, and kept until the next catalog.
 */
export class KeptUsage {
  /** @type {number} */ #nodes;
  /** @type {number} */ #width;
  /** @type {BigInt64Array} */ #values;

  /** @param {Catalog} catalog */
  constructor(catalog) {
    this.#nodes = catalog.nodes.length;
    this.#width = catalog.flavorResources.length;
    this.#values = new BigInt64Array(this.#nodes * this.#width);
  }

  /**
   * Files a request's `usage`: each entry is its node's whole usage of the request's
   * flavor-resources (`requests`; one the entry does not list is 0), replacing what was kept
   * for them; other flavor-resources and nodes keep theirs. Unknown nodes and flavor-resources
   * are skipped.
   * @param {readonly NodeUsage[]} usage
   * @param {readonly FrAmount[]} requests
   */
  receive(usage, requests) {
    const w = this.#width;
    for (const entry of usage) {
      const node = entry.node;
      if (!(node < this.#nodes)) continue;
      const row = node * w;
      for (const r of requests) if (r.fr < w) this.#values[row + r.fr] = 0n;
      for (const u of entry.usage) if (u.fr < w) this.#values[row + u.fr] = BigInt(u.amount);
    }
  }

  /**
   * A node's usage of `fr` as received last; 0 when none was.
   * @param {number} node
   * @param {number} fr
   * @returns {bigint}
   */
  get(node, fr) {
    if (!(node < this.#nodes) || !(fr < this.#width) || node < 0 || fr < 0) return 0n;
    return this.#values[node * this.#width + fr];
  }
}

/**
 * Usage by node and flavor-resource from a list of node entries: a later entry of a node
 * replaces an earlier one; a flavor-resource an entry does not list is 0.
 * @param {readonly NodeUsage[]} usage
 * @returns {(node: number, fr: number) => bigint}
 */
export function usageFromList(usage) {
  /** @type {Map<number, Map<number, bigint>>} */
  const byNode = new Map();
  for (const entry of usage) {
    byNode.set(entry.node, new Map(Array.from(entry.usage, (u) => [u.fr, BigInt(u.amount)])));
  }
  return (node, fr) => byNode.get(node)?.get(fr) ?? 0n;
}

/** @param {bigint} a @param {bigint} b */
const max = (a, b) => (a > b ? a : b);
/** @param {bigint} a @param {bigint} b */
const min = (a, b) => (a < b ? a : b);

/**
 * Quota usage of the quota tree, with Kueue's arithmetic.
 *
 * A view tracks a set of flavor-resources (for a preemption request, the preemptor's
 * `requests`; for a `tree-usage`, all of them) and reads every node's usage from where it was
 * made (a request's usage with what the instance kept, a `tree-usage`, or nothing). Usage of
 * an untracked flavor-resource reads as 0 and changes to it are ignored. Changes made through
 * the view (`addUsage`, `removeCandidate`, …) stay in the view: make a new one, or `clone()`,
 * to start again.
 */
export class QuotaView {
  /** @type {Catalog} */ #catalog;
  /** @type {Set<number> | undefined} undefined: every flavor-resource */ #tracked;
  /** @type {(node: number, fr: number) => bigint} */ #source;
  /** @type {Map<number, bigint>} node * width + fr → usage changed through the view */ #changed;

  /**
   * @param {Catalog} catalog
   * @param {Iterable<number> | undefined} frs the flavor-resources tracked (`undefined`: all)
   * @param {(node: number, fr: number) => bigint} [source] usage before any change (0 by default)
   */
  constructor(catalog, frs, source = () => 0n) {
    this.#catalog = catalog;
    this.#tracked = frs === undefined ? undefined : new Set(frs);
    this.#source = source;
    this.#changed = new Map();
  }

  /**
   * The view of a `tree-usage` (the usage of whole cohort trees): every flavor-resource is
   * tracked; nodes not listed read as 0.
   * @param {Catalog} catalog
   * @param {readonly NodeUsage[]} usage
   */
  static fromUsageTable(catalog, usage) {
    return new QuotaView(catalog, undefined, usageFromList(usage));
  }

  /** The catalog the view reads quotas from. */
  get catalog() {
    return this.#catalog;
  }

  /**
   * The tracked flavor-resources (`undefined`: every flavor-resource of the catalog).
   * @returns {number[] | undefined}
   */
  get flavorResources() {
    return this.#tracked ? [...this.#tracked] : undefined;
  }

  /** A copy with the same usage, to change independently. */
  clone() {
    const copy = new QuotaView(this.#catalog, this.#tracked, this.#source);
    for (const [k, v] of this.#changed) copy.#changed.set(k, v);
    return copy;
  }

  /** @param {number} fr */
  #tracks(fr) {
    return this.#tracked ? this.#tracked.has(fr) : fr >= 0 && fr < this.#catalog.flavorResources.length;
  }

  /** @param {number} node @param {number} fr */
  #key(node, fr) {
    return node * (this.#catalog.flavorResources.length + 1) + fr;
  }

  /**
   * A node's usage of `fr` (for a Cohort: what its children use beyond their guaranteed quota);
   * 0 for an untracked flavor-resource.
   * @param {number} node
   * @param {number} fr
   * @returns {bigint}
   */
  usage(node, fr) {
    if (!this.#tracks(fr)) return 0n;
    return this.#changed.get(this.#key(node, fr)) ?? this.#source(node, fr);
  }

  /**
   * Sets a node's usage of `fr` as is, without bubbling to its parent. Ignored for an
   * untracked flavor-resource or an unknown node.
   * @param {number} node
   * @param {number} fr
   * @param {bigint} value
   */
  setUsage(node, fr, value) {
    if (!this.#tracks(fr) || this.#catalog.node(node) === undefined) return;
    this.#changed.set(this.#key(node, fr), BigInt(value));
  }

  /**
   * The quota figures of a node for `fr` (all zero and unlimited when it lists none).
   * @param {number} node
   * @param {number} fr
   */
  quota(node, fr) {
    return this.#catalog.quota(node, fr);
  }

  /**
   * Capacity left in the node's guaranteed quota (the part never lent out): ≥ 0.
   * @param {number} node
   * @param {number} fr
   */
  localAvailable(node, fr) {
    return max(0n, this.quota(node, fr).guaranteed - this.usage(node, fr));
  }

  /**
   * What the node could still take of `fr`, borrowing as far as its limits and its ancestors
   * allow: ≥ 0.
   * @param {number} node
   * @param {number} fr
   * @returns {bigint}
   */
  available(node, fr) {
    const chain = [node, ...this.#catalog.ancestors(node)];
    const top = chain[chain.length - 1];
    let available = this.quota(top, fr).subtree - this.usage(top, fr);
    for (let i = chain.length - 2; i >= 0; i--) {
      const n = chain[i];
      const q = this.quota(n, fr);
      const used = this.usage(n, fr);
      let fromParent = available;
      if (q.borrowingLimit !== undefined && q.borrowingLimit !== null) {
        const storedInParent = q.subtree - q.guaranteed;
        const usedInParent = max(0n, used - q.guaranteed);
        fromParent = min(fromParent, storedInParent - usedInParent + q.borrowingLimit);
      }
      available = max(0n, q.guaranteed - used) + fromParent;
    }
    return max(0n, available);
  }

  /**
   * Kueue's `potentialAvailable` (see `Catalog.potentialAvailable`): independent of usage.
   * @param {number} node
   * @param {number} fr
   */
  potentialAvailable(node, fr) {
    return this.#catalog.potentialAvailable(node, fr);
  }

  /**
   * Adds `delta` (negative to remove) to the node's usage of `fr`, bubbling up only the part
   * above each node's guaranteed quota. Ignored for an untracked flavor-resource or an unknown
   * node. Exact and order-independent: adding back what was removed, in any order, restores
   * every node's usage.
   * @param {number} node
   * @param {number} fr
   * @param {bigint} delta
   */
  addUsage(node, fr, delta) {
    if (!this.#tracks(fr) || this.#catalog.node(node) === undefined) return;
    let n = node;
    let d = BigInt(delta);
    for (let steps = 0; steps <= this.#catalog.nodes.length && d !== 0n; steps++) {
      const before = this.usage(n, fr);
      const after = before + d;
      this.#changed.set(this.#key(n, fr), after);
      const parent = this.#catalog.parent(n);
      if (parent === undefined) return;
      const g = this.quota(n, fr).guaranteed;
      d = max(0n, after - g) - max(0n, before - g);
      n = parent;
    }
  }

  /**
   * Adds a workload's usage (one entry per flavor-resource) at a node.
   * @param {number} node
   * @param {Iterable<FrAmount>} usage
   */
  addWorkload(node, usage) {
    for (const u of usage) this.addUsage(node, u.fr, BigInt(u.amount));
  }

  /**
   * Removes a workload's usage at a node.
   * @param {number} node
   * @param {Iterable<FrAmount>} usage
   */
  removeWorkload(node, usage) {
    for (const u of usage) this.addUsage(node, u.fr, -BigInt(u.amount));
  }

  /**
   * Removes a preemption candidate's usage from its ClusterQueue (as if it were evicted).
   * @param {{ clusterQueue: number, usage: Iterable<FrAmount> }} candidate
   */
  removeCandidate(candidate) {
    const node = this.#catalog.clusterQueueNode(candidate.clusterQueue);
    if (node !== undefined) this.removeWorkload(node, candidate.usage);
  }

  /**
   * Puts a removed candidate's usage back.
   * @param {{ clusterQueue: number, usage: Iterable<FrAmount> }} candidate
   */
  restoreCandidate(candidate) {
    const node = this.#catalog.clusterQueueNode(candidate.clusterQueue);
    if (node !== undefined) this.addWorkload(node, candidate.usage);
  }

  /**
   * Whether the node would be over its own quota with `extra` more of `fr`: for a ClusterQueue,
   * past its nominal quota; for a Cohort, past its subtree quota.
   * @param {number} node
   * @param {number} fr
   * @param {bigint} [extra]
   */
  borrowing(node, fr, extra = 0n) {
    const q = this.quota(node, fr);
    const limit = this.#catalog.isCohort(node) ? q.subtree : q.nominal;
    return limit < this.usage(node, fr) + BigInt(extra);
  }

  /**
   * Kueue's `IsWithinNominalInResources`: usage ≤ subtree quota for every listed
   * flavor-resource.
   * @param {number} node
   * @param {Iterable<number>} frs
   */
  withinNominal(node, frs) {
    for (const fr of frs) if (this.usage(node, fr) > this.quota(node, fr).subtree) return false;
    return true;
  }

  /**
   * Kueue's `workloadFits`: every request is within what the node has available and, unless
   * `allowBorrowing`, does not take the node past its nominal quota.
   * @param {number} node
   * @param {Iterable<FrAmount>} requests
   * @param {boolean} allowBorrowing
   */
  fits(node, requests, allowBorrowing) {
    for (const r of requests) {
      const amount = BigInt(r.amount);
      if (!allowBorrowing && this.borrowing(node, r.fr, amount)) return false;
      if (amount > this.available(node, r.fr)) return false;
    }
    return true;
  }
}
