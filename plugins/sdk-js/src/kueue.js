// Kueue's default decisions where they are simple, to reuse, reorder or fall back to.
//
// - Ordering: `sortKey` (Kueue's queue order), `sortKeyFor` (with admission fair sharing) and
//   `orderHeads` (Kueue's classical cycle order, without fair sharing's tournament).
// - Preemption: `selectVictims(request)` answers `kueue-among` every candidate — the host runs
//   Kueue's own victim selection (classical, or fair sharing's) — and `kueueAmong(indices)`
//   narrows it; `preemptionNeeds` is what that selection reads.
// - Flavor assignment: `chooseFlavor` (Kueue's scan with the ClusterQueue's fungibility).
//   The host does NOT apply Kueue's choice when a policy answers no flavor: `undefined` means
//   "no flavor this cycle". Answer `kueue.chooseFlavor(...)` to get Kueue's.
// - Placement: Kueue's BestFit is not part of this SDK and the WIT has no "Kueue's placement"
//   answer; see placement.js (`Tree.fill`).
// - Dispatch (MultiKueue): `allAtOnce` and `incremental`, Kueue's two dispatchers (dispatch.js).

import { kueueAmong } from './preemption.js';

export { allAtOnce, incremental } from './dispatch.js';

/** @typedef {import('wasq:policy/types@1.1.0').Fungibility} Fungibility */
/** @typedef {import('wasq:policy/types@1.1.0').PreemptionConfig} PreemptionConfig */
/** @typedef {import('wasq:policy/flavor-assignment@1.1.0').FlavorOption} FlavorOption */
/** @typedef {import('wasq:policy/flavor-assignment@1.1.0').FitMode} FitMode */
/** @typedef {import('wasq:policy/types@1.1.0').Needs} Needs */

/**
 * A queue-order key: workloads are popped smallest first, comparing `primary`, then
 * `secondary`, then `tertiary` (each an `s64`, a BigInt); equal keys keep the host's order.
 * @typedef {object} SortKey
 * @property {bigint} primary
 * @property {bigint} secondary
 * @property {bigint} tertiary
 */

/**
 * `-value` as an `s64` wraps (as Rust's `wrapping_neg`): `-(−2^63)` is `−2^63`.
 * @param {bigint} value
 */
const neg = (value) => BigInt.asIntN(64, -value);

/**
 * Kueue's queue order: higher priority first, then older first — `(-priority, created, 0)`.
 * @param {{ priority: bigint, created: bigint }} workload
 * @returns {SortKey}
 */
export function sortKey(workload) {
  return sortKeyWithPriority(workload.priority, workload.created);
}

/**
 * Kueue's queue order for a given effective priority.
 * @param {bigint} priority
 * @param {bigint} created
 * @returns {SortKey}
 */
export function sortKeyWithPriority(priority, created) {
  return { primary: neg(priority), secondary: created, tertiary: 0n };
}

/**
 * Compares two sort keys as the host does (negative: `a` pops first).
 * @param {SortKey} a
 * @param {SortKey} b
 * @returns {number}
 */
export function compareSortKeys(a, b) {
  for (const part of /** @type {const} */ (['primary', 'secondary', 'tertiary'])) {
    if (a[part] !== b[part]) return a[part] < b[part] ? -1 : 1;
  }
  return 0;
}

/**
 * A non-negative float as an `s64` with the same order (the IEEE 754 bit patterns of positive
 * numbers, +∞ included, sort like the numbers); zero of either sign, negative numbers and NaN
 * count as 0.
 * @param {number} value
 * @returns {bigint}
 */
export function orderBits(value) {
  if (!(value > 0)) return 0n;
  return new BigInt64Array(new Float64Array([value]).buffer)[0];
}

/**
 * A LocalQueue's admission-fair-sharing usage: the host's `weighted` figure when it sent one
 * for `localQueue`; otherwise that of a LocalQueue with nothing consumed (0, or +∞ for a
 * `fairWeight` ≤ 0).
 * @param {import('./catalog.js').Catalog} catalog
 * @param {number} localQueue
 * @param {import('wasq:policy/types@1.1.0').LocalQueueUsage | undefined} usage
 * @returns {number}
 */
export function weightedLocalQueueUsage(catalog, localQueue, usage) {
  if (usage !== undefined && usage.localQueue === localQueue) return usage.weighted;
  const lq = catalog.localQueue(localQueue);
  return lq !== undefined && lq.fairWeight <= 0n ? Infinity : 0;
}

/**
 * Kueue's queue order under admission fair sharing too: for a workload of a ClusterQueue that
 * uses it (`catalog.usesAdmissionFairSharing`) and has a LocalQueue,
 * `(orderBits(LocalQueue usage), -priority, created)`; otherwise `sortKey`. The usage is
 * `workload.localQueueUsage` (declare `localQueueUsage` in `needs`).
 * @param {import('./catalog.js').Catalog} catalog
 * @param {import('./identity.js').Workload} workload
 * @returns {SortKey}
 */
export function sortKeyFor(catalog, workload) {
  const lq = workload.localQueue;
  if (lq !== undefined && catalog.usesAdmissionFairSharing(workload.clusterQueue)) {
    const usage = weightedLocalQueueUsage(catalog, lq, workload.localQueueUsage);
    return { primary: orderBits(usage), secondary: neg(workload.priority), tertiary: workload.created };
  }
  return sortKey(workload);
}

/**
 * What `orderHeads` compares of a head.
 * @typedef {object} HeadFacts
 * @property {boolean} secondPass
 * @property {number} borrowingLevel
 * @property {bigint} priority
 * @property {bigint} created
 */

/**
 * Kueue's classical cycle order (without fair sharing): positions of `heads`, sorted stably by
 * second pass first, then lower borrowing level, higher priority, older.
 * @param {readonly HeadFacts[]} heads
 * @returns {number[]}
 */
export function orderHeads(heads) {
  return orderHeadsByPriority(heads, (h) => h.priority);
}

/**
 * Kueue's cycle order with the effective priority of each head given by `priority` (for a
 * policy whose queue order changed priorities: read them back from `head.key`).
 * @template {HeadFacts} H
 * @param {readonly H[]} heads
 * @param {(head: H) => bigint} priority
 * @returns {number[]}
 */
export function orderHeadsByPriority(heads, priority) {
  const keyed = heads.map((h, i) => ({ i, pass: h.secondPass ? 0 : 1, level: h.borrowingLevel, p: neg(priority(h)), created: h.created }));
  keyed.sort(
    (a, b) =>
      a.pass - b.pass ||
      a.level - b.level ||
      (a.p !== b.p ? (a.p < b.p ? -1 : 1) : 0) ||
      (a.created !== b.created ? (a.created < b.created ? -1 : 1) : 0),
  );
  return keyed.map((k) => k.i);
}

/**
 * What Kueue's victim selection reads under the catalog's configuration: the quota usage of the
 * preemptor's cohort tree when fair sharing is on. Never who workloads are: a policy that reads
 * identity adds it (`{ ...kueue.preemptionNeeds(catalog), identity: true }`).
 * @param {import('./catalog.js').Catalog} catalog
 * @returns {Needs}
 */
export function preemptionNeeds(catalog) {
  return { treeUsage: catalog.fairSharingEnabled, localQueueUsage: false, identity: false, podSets: false };
}

/**
 * Kueue's victims for a request: the host runs Kueue's selection (classical, or fair
 * sharing's when on) over every candidate. Narrow it with `kueueAmong(indices)`.
 * @param {{ candidates: readonly unknown[] }} request
 */
export function selectVictims(request) {
  return kueueAmong(request.candidates.map((_, i) => i));
}

export { kueueAmong };

/** @type {Record<FitMode, number>} */
const RANK = { 'no-fit': 0, 'no-preemption-candidates': 1, preempt: 2, reclaim: 3, fit: 4 };

/**
 * Kueue's `isPreferred(a, b)`: whether (mode, borrowing level) `a` is better than `b`.
 * @param {[FitMode, number]} a
 * @param {[FitMode, number]} b
 * @param {Fungibility} fungibility
 */
export function isPreferred(a, b, fungibility) {
  if (a[0] === 'no-fit') return false;
  if (b[0] === 'no-fit') return true;
  const aNone = a[0] === 'no-preemption-candidates';
  const bNone = b[0] === 'no-preemption-candidates';
  if (aNone !== bNone) return !aNone;
  if (fungibility.preference === 'borrowing-over-preemption') {
    return a[0] !== b[0] ? RANK[a[0]] > RANK[b[0]] : a[1] < b[1];
  }
  return a[1] !== b[1] ? a[1] < b[1] : RANK[a[0]] > RANK[b[0]];
}

/**
 * Kueue's `shouldTryNextFlavor` for a flavor's (mode, borrowing level).
 * @param {[FitMode, number]} mode
 * @param {Fungibility} fungibility
 */
export function shouldTryNextFlavor(mode, fungibility) {
  switch (mode[0]) {
    case 'no-fit':
    case 'no-preemption-candidates':
      return true;
    case 'preempt':
    case 'reclaim':
      if (fungibility.whenCanPreempt === 'try-next-flavor') return true;
  }
  return mode[1] > 0 && fungibility.whenCanBorrow === 'try-next-flavor';
}

/**
 * Kueue's flavor choice: scans the options in the ClusterQueue's order, stops at the first one
 * the fungibility rules accept, otherwise takes the most preferred one seen; `undefined` when
 * no option can host the podSet.
 * @param {ReadonlyArray<FlavorOption | undefined>} options
 * @param {Fungibility} fungibility
 * @returns {number | undefined}
 */
export function chooseFlavor(options, fungibility) {
  /** @type {number | undefined} */
  let best;
  /** @type {[FitMode, number]} */
  let bestMode = ['no-fit', 0xffffffff];
  for (let i = 0; i < options.length; i++) {
    const option = options[i];
    if (option === undefined || option === null) continue;
    /** @type {[FitMode, number]} */
    const mode = [option.mode, option.borrowLevel];
    if (!shouldTryNextFlavor(mode, fungibility)) return i;
    if (isPreferred(mode, bestMode, fungibility)) {
      best = i;
      bestMode = mode;
    }
  }
  return best;
}

/**
 * Kueue's defaults for `spec.flavorFungibility`.
 * @returns {Fungibility}
 */
export function defaultFungibility() {
  return { whenCanBorrow: 'may-stop-search', whenCanPreempt: 'try-next-flavor', preference: 'borrowing-over-preemption' };
}

/**
 * Kueue's defaults for `spec.preemption`.
 * @returns {PreemptionConfig}
 */
export function defaultPreemption() {
  return { withinClusterQueue: 'never', reclaimWithinCohort: 'never', borrowWithinCohort: 'never', maxPriorityThreshold: undefined };
}

/**
 * The fungibility settings of a ClusterQueue; Kueue's defaults when it is unknown.
 * @param {import('./catalog.js').Catalog} catalog
 * @param {number} clusterQueue
 * @returns {Fungibility}
 */
export function fungibilityOf(catalog, clusterQueue) {
  return catalog.clusterQueue(clusterQueue)?.fungibility ?? defaultFungibility();
}
