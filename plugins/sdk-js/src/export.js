// What every exported interface keeps between calls: the policy, the latest catalog and the
// instance's string table; and how a failure is reported.

import { Catalog } from './catalog.js';
import { describeError, write } from './log.js';
import { StringTable } from './strings.js';

/**
 * Checks that `policy` is an object with the methods a kind requires, and that optional ones,
 * when present, are functions. Throws a `TypeError` naming what is missing.
 * @param {unknown} policy
 * @param {string} kind e.g. `preemption`
 * @param {readonly string[]} required
 * @param {readonly string[]} optional
 */
export function checkPolicy(policy, kind, required, optional) {
  if (typeof policy !== 'object' || policy === null) {
    throw new TypeError(`export a ${kind} policy: expected an object (an instance of the policy class), got ${typeof policy}`);
  }
  const p = /** @type {Record<string, unknown>} */ (policy);
  for (const name of required) {
    if (typeof p[name] !== 'function') {
      throw new TypeError(`a ${kind} policy must have a method ${name}()`);
    }
  }
  for (const name of optional) {
    if (p[name] !== undefined && typeof p[name] !== 'function') {
      throw new TypeError(`${name} of a ${kind} policy must be a method`);
    }
  }
}

/**
 * The state of one exported interface: the catalog (with the string table) the policy reads.
 * Each `export*` call makes its own, so two exports never share tables.
 */
export class PluginState {
  /** The instance's string table: it outlives catalogs. */
  strings = new StringTable();
  /** @type {Catalog} The latest catalog the host sent (an empty one before the first). */
  catalog = Catalog.empty(this.strings);

  /**
   * Installs a new catalog from the host (the string table stays).
   * @param {import('wasq:policy/types@1.1.0').Catalog} raw
   */
  setCatalog(raw) {
    this.catalog = new Catalog(raw, this.strings);
  }
}

/**
 * Runs one WIT function: on an exception (of the policy or of the SDK), logs it at error level
 * through the host, naming the function, and throws it again. The component then traps, and
 * the host falls back to its built-in policy for the decision.
 * @template T
 * @param {string} fn the WIT function, e.g. `select-victims`
 * @param {() => T} body
 * @returns {T}
 */
export function reported(fn, body) {
  try {
    return body();
  } catch (error) {
    write('error', `${fn} failed: ${describeError(error)}`);
    throw error;
  }
}

/**
 * A list index the policy answered, checked: an integer in `[0, length)`.
 * @param {unknown} value
 * @param {number} length
 * @param {string} what what the index is into, for the message
 * @returns {number}
 */
export function checkIndex(value, length, what) {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value >= length) {
    throw new RangeError(`${String(value)} is not an index into ${what} (0 to ${length - 1})`);
  }
  return value;
}

/**
 * Indices the policy answered, checked: integers in `[0, length)`, each at most once.
 * @param {unknown} values
 * @param {number} length
 * @param {string} what
 * @returns {number[]}
 */
export function checkIndices(values, length, what) {
  if (values === null || typeof values !== 'object' || !(Symbol.iterator in values)) {
    throw new TypeError(`expected a list of indices into ${what}, got ${String(values)}`);
  }
  const seen = new Set();
  const out = [];
  for (const v of /** @type {Iterable<unknown>} */ (values)) {
    const i = checkIndex(v, length, what);
    if (seen.has(i)) throw new RangeError(`index ${i} into ${what} given twice`);
    seen.add(i);
    out.push(i);
  }
  return out;
}

/**
 * The position of an item the policy answered: a number, or a view with an `index` (a head or
 * a candidate of this call).
 * @param {unknown} item
 * @returns {unknown}
 */
export function positionOf(item) {
  if (item !== null && typeof item === 'object' && 'index' in item) return item.index;
  return item;
}

/** The needs of an ordering or preemption policy that says nothing (as the Rust SDK): who workloads are and what they request. */
export const DEFAULT_NEEDS = Object.freeze({ treeUsage: false, localQueueUsage: false, identity: true, podSets: true });

/**
 * `needs` as the host takes it: every flag a boolean.
 * @param {unknown} needs
 * @returns {Required<import('wasq:policy/types@1.1.0').Needs>}
 */
export function normalizeNeeds(needs) {
  if (needs === null || typeof needs !== 'object') throw new TypeError(`needs() must return an object of flags, got ${String(needs)}`);
  const n = /** @type {import('wasq:policy/types@1.1.0').Needs} */ (needs);
  return { treeUsage: n.treeUsage === true, localQueueUsage: n.localQueueUsage === true, identity: n.identity === true, podSets: n.podSets === true };
}
