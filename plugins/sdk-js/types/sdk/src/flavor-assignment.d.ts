import { Workload } from './identity.js';
export type Catalog = import('./catalog.js').Catalog;
export type RawRequest = import('wasq:policy/flavor-assignment@1.1.0').Request;
export type FlavorOption = import('wasq:policy/flavor-assignment@1.1.0').FlavorOption;
/** @typedef {import('./catalog.js').Catalog} Catalog */
/** @typedef {import('wasq:policy/flavor-assignment@1.1.0').Request} RawRequest */
/** @typedef {import('wasq:policy/flavor-assignment@1.1.0').FlavorOption} FlavorOption */
/**
 * One podSet and one resource group to choose a flavor for (`flavor-assignment.request`).
 */
export declare class Request {
    /** @type {Workload} The workload the podSet belongs to (identity and podSets always sent). */ workload: Workload;
    /** @type {number} The podSet: an index into `workload.podSets`. */ podSet: number;
    /** @type {import('wasq:policy/types@1.1.0').ResourceAmount[]} The group's resources the podSet requests, in total. */ requests: import('wasq:policy/types@1.1.0').ResourceAmount[];
    /**
     * @type {Array<FlavorOption | undefined>} Every flavor of the group in the ClusterQueue's
     * order, with the host's evaluation (`flavor`, `mode`, `borrowLevel`); `undefined` where the
     * flavor cannot host the podSet at all. Answers name an entry by its index.
     */
    options: Array<FlavorOption | undefined>;
    /** @type {bigint} The scheduler's clock at this decision (ms). */ now: bigint;
    /** @type {RawRequest} The request as the host sent it. */ raw: RawRequest;
    /**
     * @param {Catalog} catalog
     * @param {RawRequest} raw
     */
    constructor(catalog: Catalog, raw: RawRequest);
}
export type FlavorAssignmentPolicy = {
    /**
     * called after each new catalog:
     * the place to read settings.
     */
    catalogChanged?: (catalog: Catalog) => void;
    /**
     * the index
     * of the chosen entry of `request.options` (one that is not `undefined`), or `undefined` to
     * assign no flavor this cycle.
     */
    chooseFlavor: (catalog: Catalog, request: Request) => number | undefined;
};
/**
 * A flavor-assignment policy: what `exportFlavorAssignment` takes.
 * @typedef {object} FlavorAssignmentPolicy
 * @property {(catalog: Catalog) => void} [catalogChanged] called after each new catalog:
 *   the place to read settings.
 * @property {(catalog: Catalog, request: Request) => number | undefined} chooseFlavor the index
 *   of the chosen entry of `request.options` (one that is not `undefined`), or `undefined` to
 *   assign no flavor this cycle.
 */
/**
 * The WIT interface `wasq:policy/flavor-assignment` of a policy: export it from the plugin's
 * entry module as `export const flavorAssignment = exportFlavorAssignment(new MyPolicy())`.
 * An exception is logged at error level through the host, then thrown again (the host falls
 * back to its built-in policy for that call).
 * @param {FlavorAssignmentPolicy} policy
 */
export declare function exportFlavorAssignment(policy: FlavorAssignmentPolicy): {
    /** @param {import('wasq:policy/types@1.1.0').Catalog} catalog */
    setCatalog(catalog: import('wasq:policy/types@1.1.0').Catalog): void;
    /**
     * @param {import('wasq:policy/types@1.1.0').NewStrings | undefined} strings
     * @param {RawRequest[]} requests
     * @returns {Array<number | undefined>}
     */
    chooseFlavors(strings: import('wasq:policy/types@1.1.0').NewStrings | undefined, requests: RawRequest[]): Array<number | undefined>;
};
