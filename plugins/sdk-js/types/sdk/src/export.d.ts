import { Catalog } from './catalog.js';
import { StringTable } from './strings.js';
/**
 * Checks that `policy` is an object with the methods a kind requires, and that optional ones,
 * when present, are functions. Throws a `TypeError` naming what is missing.
 * @param {unknown} policy
 * @param {string} kind e.g. `preemption`
 * @param {readonly string[]} required
 * @param {readonly string[]} optional
 */
export declare function checkPolicy(policy: unknown, kind: string, required: readonly string[], optional: readonly string[]): void;
/**
 * The state of one exported interface: the catalog (with the string table) the policy reads.
 * Each `export*` call makes its own, so two exports never share tables.
 */
export declare class PluginState {
    /** The instance's string table: it outlives catalogs. */
    strings: StringTable;
    /** @type {Catalog} The latest catalog the host sent (an empty one before the first). */
    catalog: Catalog;
    /**
     * Installs a new catalog from the host (the string table stays).
     * @param {import('wasq:policy/types@1.1.0').Catalog} raw
     */
    setCatalog(raw: import('wasq:policy/types@1.1.0').Catalog): void;
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
export declare function reported<T>(fn: string, body: () => T): T;
/**
 * A list index the policy answered, checked: an integer in `[0, length)`.
 * @param {unknown} value
 * @param {number} length
 * @param {string} what what the index is into, for the message
 * @returns {number}
 */
export declare function checkIndex(value: unknown, length: number, what: string): number;
/**
 * Indices the policy answered, checked: integers in `[0, length)`, each at most once.
 * @param {unknown} values
 * @param {number} length
 * @param {string} what
 * @returns {number[]}
 */
export declare function checkIndices(values: unknown, length: number, what: string): number[];
/**
 * The position of an item the policy answered: a number, or a view with an `index` (a head or
 * a candidate of this call).
 * @param {unknown} item
 * @returns {unknown}
 */
export declare function positionOf(item: unknown): unknown;
/** The needs of an ordering or preemption policy that says nothing (as the Rust SDK): who workloads are and what they request. */
export declare const DEFAULT_NEEDS: Readonly<{
    treeUsage: false;
    localQueueUsage: false;
    identity: true;
    podSets: true;
}>;
/**
 * `needs` as the host takes it: every flag a boolean.
 * @param {unknown} needs
 * @returns {Required<import('wasq:policy/types@1.1.0').Needs>}
 */
export declare function normalizeNeeds(needs: unknown): Required<import('wasq:policy/types@1.1.0').Needs>;
