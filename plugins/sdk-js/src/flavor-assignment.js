// Flavor-assignment policies: a class with `chooseFlavor(catalog, request)` (and optionally
// `catalogChanged(catalog)`), exported with
// `export const flavorAssignment = exportFlavorAssignment(new MyPolicy())`.
//
// The host evaluates every flavor of the resource group for the podSet and sends the result;
// the policy only chooses among the offered options, and the host checks that the choice fits.
// The host calls only when there is a choice. Answering `undefined` assigns NO flavor this
// cycle (the workload is not admitted): it is not "Kueue's choice" — that is
// `kueue.chooseFlavor(request.options, kueue.fungibilityOf(catalog, request.workload.clusterQueue))`.

import { checkIndex, checkPolicy, PluginState, reported } from './export.js';
import { Workload } from './identity.js';

/** @typedef {import('./catalog.js').Catalog} Catalog */
/** @typedef {import('wasq:policy/flavor-assignment@1.1.0').Request} RawRequest */
/** @typedef {import('wasq:policy/flavor-assignment@1.1.0').FlavorOption} FlavorOption */

/**
 * One podSet and one resource group to choose a flavor for (`flavor-assignment.request`).
 */
export class Request {
  /** @type {Workload} The workload the podSet belongs to (identity and podSets always sent). */ workload;
  /** @type {number} The podSet: an index into `workload.podSets`. */ podSet;
  /** @type {import('wasq:policy/types@1.1.0').ResourceAmount[]} The group's resources the podSet requests, in total. */ requests;
  /**
   * @type {Array<FlavorOption | undefined>} Every flavor of the group in the ClusterQueue's
   * order, with the host's evaluation (`flavor`, `mode`, `borrowLevel`); `undefined` where the
   * flavor cannot host the podSet at all. Answers name an entry by its index.
   */
  options;
  /** @type {bigint} The scheduler's clock at this decision (ms). */ now;
  /** @type {RawRequest} The request as the host sent it. */ raw;

  /**
   * @param {Catalog} catalog
   * @param {RawRequest} raw
   */
  constructor(catalog, raw) {
    this.raw = raw;
    this.workload = new Workload(catalog, raw.workload);
    this.podSet = raw.podSet;
    this.requests = Array.from(raw.requests);
    this.options = Array.from(raw.options, (o) => o ?? undefined);
    this.now = raw.now;
  }
}

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
export function exportFlavorAssignment(policy) {
  checkPolicy(policy, 'flavor-assignment', ['chooseFlavor'], ['catalogChanged']);
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
     * @returns {Array<number | undefined>}
     */
    chooseFlavors(strings, requests) {
      return reported('choose-flavors', () => {
        state.strings.add(strings);
        const catalog = state.catalog;
        return Array.from(requests, (raw) => {
          const request = new Request(catalog, raw);
          const chosen = policy.chooseFlavor(catalog, request);
          if (chosen === undefined || chosen === null) return undefined;
          const i = checkIndex(chosen, request.options.length, `the ${request.options.length} options`);
          if (request.options[i] === undefined) throw new RangeError(`chooseFlavor: option ${i} cannot host the podSet (it is undefined)`);
          return i;
        });
      });
    },
  };
}
