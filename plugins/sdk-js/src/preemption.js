// Preemption policies: a class with `selectVictims(catalog, request)` (and optionally
// `catalogChanged(catalog)`, `needs(catalog)`), exported with
// `export const preemption = exportPreemption(new MyPolicy())`.
//
// The host offers only candidates Kueue's rules make eligible and checks every answer. A
// candidate crosses in two parts, both joined by the SDK into one `Candidate` view: its row of
// the instance's table of admitted workloads (`new-rows`: workload, queues, priority, times,
// requeue history, quota held, identity — once per admission) and what the request says of it
// (its group: kind, lca, evicting; its LocalQueue's share). The request's quota usage arrives
// as changes to what the instance kept (`usage-kept`): `request.quotaView()` reads it merged.

import { checkIndices, checkPolicy, DEFAULT_NEEDS, normalizeNeeds, PluginState, reported } from './export.js';
import { Identified, Workload } from './identity.js';
import { KeptUsage, QuotaView, usageFromList } from './quota.js';

/** @typedef {import('./catalog.js').Catalog} Catalog */
/** @typedef {import('wasq:policy/types@1.1.0').FrAmount} FrAmount */
/** @typedef {import('wasq:policy/types@1.1.0').Needs} Needs */
/** @typedef {import('wasq:policy/preemption@1.1.0').AdmittedRow} AdmittedRow */
/** @typedef {import('wasq:policy/preemption@1.1.0').NewRows} NewRows */
/** @typedef {import('wasq:policy/preemption@1.1.0').CandidateKind} CandidateKind */
/** @typedef {import('wasq:policy/preemption@1.1.0').Request} RawRequest */

// --- Answers ---------------------------------------------------------------------------------

/**
 * An answer to one preemption request, as the WIT `answer` variant crosses (jco's mapping).
 * @typedef {{ tag: 'no-victims' }
 *   | { tag: 'victims', val: { victims: number[], allowBorrowing: boolean } }
 *   | { tag: 'kueue-among', val: number[] }} Answer
 */

/** Preemption cannot make the preemptor fit: it waits, and nothing is preempted for it. */
export const noVictims = Object.freeze(/** @type {const} */ ({ tag: 'no-victims' }));

/**
 * These victims: indices into `request.candidates` (numbers, or the candidates themselves),
 * each at most once. `allowBorrowing`: whether the preemptor may borrow once they are gone;
 * it must be `false` when a victim is a `reclaim-without-borrowing` candidate. The host checks
 * that they make the preemptor fit, and that none is beyond need.
 * @param {Iterable<number | { index: number }>} indices
 * @param {boolean} allowBorrowing
 * @returns {Answer}
 */
export function victims(indices, allowBorrowing) {
  if (typeof allowBorrowing !== 'boolean') {
    throw new TypeError('victims(indices, allowBorrowing): allowBorrowing must be true or false');
  }
  return { tag: 'victims', val: { victims: positions(indices), allowBorrowing } };
}

/**
 * Kueue's victims, chosen only among these candidates (indices into `request.candidates`, or
 * the candidates themselves, in any order): the host runs Kueue's selection — classical, or fair
 * sharing's when `catalog.fairSharing` is set — as if the other candidates were not eligible,
 * and answers no victims when those cannot make the preemptor fit.
 * @param {Iterable<number | { index: number }>} indices
 * @returns {Answer}
 */
export function kueueAmong(indices) {
  return { tag: 'kueue-among', val: positions(indices) };
}

/**
 * @param {Iterable<number | { index: number }>} items
 * @returns {number[]}
 */
function positions(items) {
  return Array.from(items, (x) => (typeof x === 'object' && x !== null ? x.index : x));
}

/**
 * An answer the policy returned, checked and in the form the host takes.
 * @param {unknown} answer
 * @param {number} candidates how many candidates the request has
 * @returns {Answer}
 */
function checkAnswer(answer, candidates) {
  const what = `the ${candidates} candidates`;
  const a = /** @type {{ tag?: unknown, val?: any }} */ (answer ?? {});
  switch (a.tag) {
    case 'no-victims':
      return noVictims;
    case 'kueue-among':
      return { tag: 'kueue-among', val: checkIndices(a.val, candidates, what) };
    case 'victims': {
      const list = checkIndices(a.val?.victims, candidates, what);
      if (list.length === 0) throw new RangeError('victims([]) names no victim: answer noVictims');
      if (typeof a.val.allowBorrowing !== 'boolean') throw new TypeError('victims: allowBorrowing must be true or false');
      return { tag: 'victims', val: { victims: list, allowBorrowing: a.val.allowBorrowing } };
    }
    default:
      throw new TypeError(
        `selectVictims must return noVictims, victims(indices, allowBorrowing) or kueueAmong(indices); got ${String(answer)}`,
      );
  }
}

// --- The table of admitted workloads ------------------------------------------------------

/** What a row the host never sent reads as: workload 0, ClusterQueue 0, no quota, nobody. */
const EMPTY_ROW = Object.freeze(
  /** @type {AdmittedRow} */ ({
    workload: 0,
    clusterQueue: 0,
    localQueue: undefined,
    priority: 0n,
    created: 0n,
    admitted: 0n,
    requeueCount: 0,
    requeueReason: undefined,
    usage: [],
    identity: undefined,
  }),
);

/**
 * The instance's table of admitted workloads (`new-rows`): row `first + k` is `rows[k]`;
 * `first == 0` starts a new table. A `first` past the end leaves rows never received between
 * (they read as the empty row); one inside the table replaces the rows from `first` on; the
 * host does neither.
 */
export class RowTable {
  /** @type {AdmittedRow[]} */
  #rows = [];

  /** How many rows the table holds. */
  get size() {
    return this.#rows.length;
  }

  /** @param {NewRows | undefined} added */
  add(added) {
    if (added === undefined || added === null) return;
    const first = added.first >>> 0;
    if (first < this.#rows.length) this.#rows.length = first;
    while (this.#rows.length < first) this.#rows.push(EMPTY_ROW);
    for (const row of added.rows) this.#rows.push(row);
  }

  /**
   * Row `id`, or the empty row when the table does not hold it.
   * @param {number} id
   * @returns {AdmittedRow}
   */
  get(id) {
    return this.#rows[id] ?? EMPTY_ROW;
  }
}

// --- Views -------------------------------------------------------------------------------

/**
 * An admitted workload that may be preempted: its row joined with what the request says of it.
 */
export class Candidate extends Identified {
  /** @type {number} Its position in `request.candidates`: what answers name. */ index;
  /** @type {number} Its row in the instance's table (as the host sent it). */ row;
  /** @type {number} The workload's handle. */ workload;
  /** @type {number} The ClusterQueue it holds its quota in. */ clusterQueue;
  /** @type {bigint} Effective priority. */ priority;
  /** @type {bigint} Creation time (ms). */ created;
  /** @type {bigint} When its quota was reserved (ms). */ admitted;
  /** @type {number} How often it was evicted and queued again before this admission. */ requeueCount;
  /** @type {import('wasq:policy/types@1.1.0').RequeueReason | undefined} */ requeueReason;
  /** @type {FrAmount[]} The quota it holds, per flavor-resource. */ usage;
  /** @type {CandidateKind} How it relates to the preemptor (decides the `Preempted` reason). */ kind;
  /**
   * @type {number | undefined} For another ClusterQueue's candidate: the cohort under which it
   * was found (or, under fair sharing, the lowest common ancestor); `undefined` for the
   * preemptor's own queue.
   */
  lca;
  /** @type {boolean} Already being evicted (its quota is held until that completes). */ evicting;
  /** @type {number | undefined} Its LocalQueue's admission-fair-sharing usage, when sent. */ localQueueUsage;

  /**
   * @param {Catalog} catalog
   * @param {number} index
   * @param {number} row
   * @param {AdmittedRow} data
   * @param {Relation} relation
   * @param {number | undefined} localQueueUsage
   */
  constructor(catalog, index, row, data, relation, localQueueUsage) {
    super(catalog, data.identity, data.localQueue);
    this.index = index;
    this.row = row;
    this.workload = data.workload;
    this.clusterQueue = data.clusterQueue;
    this.priority = data.priority;
    this.created = data.created;
    this.admitted = data.admitted;
    this.requeueCount = data.requeueCount;
    this.requeueReason = data.requeueReason ?? undefined;
    this.usage = Array.from(data.usage);
    this.kind = relation.kind;
    this.lca = relation.lca ?? undefined;
    this.evicting = relation.evicting;
    this.localQueueUsage = localQueueUsage;
  }
}

/**
 * What a candidate's group says of it.
 * @typedef {object} Relation
 * @property {CandidateKind} kind
 * @property {number | undefined} lca
 * @property {boolean} evicting
 */

/** What a candidate in no group reads as (the host never sends one). */
const UNGROUPED = Object.freeze(/** @type {Relation} */ ({ kind: 'same-queue', lca: undefined, evicting: false }));

/**
 * One preemptor and everything needed to choose its victims (`preemption.request`), joined
 * with the instance's tables.
 */
export class Request {
  /** @type {Workload} The pending workload that needs room. */ preemptor;
  /** @type {FrAmount[]} What it needs per flavor-resource under the flavors being tried. */ requests;
  /** @type {number[]} The flavor-resources (of `requests`) where it does not fit without preemption. */ needsPreemption;
  /**
   * @type {Candidate[]} The eligible candidates, in Kueue's candidate order; answers name them
   * by position (`candidate.index`).
   */
  candidates;
  /** @type {bigint} The scheduler's clock at this decision (ms). */ now;
  /** @type {RawRequest} The request as the host sent it (its `usage` lists only what changed when `usageKept`). */ raw;

  /** @type {Catalog} */ #catalog;
  /** @type {(node: number, fr: number) => bigint} */ #usage;

  /**
   * @param {Catalog} catalog
   * @param {RawRequest} raw
   * @param {RowTable} rows
   * @param {KeptUsage} kept the instance's kept usage, this request's already filed
   */
  constructor(catalog, raw, rows, kept) {
    this.#catalog = catalog;
    this.raw = raw;
    this.preemptor = new Workload(catalog, raw.preemptor);
    this.requests = Array.from(raw.requests);
    this.needsPreemption = Array.from(raw.needsPreemption);
    this.now = raw.now;
    this.#usage = raw.usageKept ? (node, fr) => kept.get(node, fr) : usageFromList(raw.usage);

    /** @type {Map<number, Relation>} */
    const groupOfRow = new Map();
    for (const g of raw.groups) {
      const relation = { kind: g.kind, lca: g.lca ?? undefined, evicting: g.evicting };
      for (const row of g.rows) groupOfRow.set(row, relation);
    }
    /** @type {Map<number, number>} */
    const shareOf = new Map(Array.from(raw.localQueueUsage, (s) => [s.localQueue, s.weighted]));
    this.candidates = Array.from(raw.candidates, (row, index) => {
      const data = rows.get(row);
      const share = data.localQueue === undefined || data.localQueue === null ? undefined : shareOf.get(data.localQueue);
      return new Candidate(catalog, index, row, data, groupOfRow.get(row) ?? UNGROUPED, share);
    });
  }

  /** Whether the instance keeps the quota usage it receives (the host sends `true`). */
  get usageKept() {
    return this.raw.usageKept;
  }

  /**
   * A new `QuotaView` of this request: its `requests`' flavor-resources, every node's usage as
   * the host has it for this request (what the instance kept merged with this request's
   * changes; or, for a request made with `usageKept: false`, its own `usage` list).
   * @returns {QuotaView}
   */
  quotaView() {
    return new QuotaView(this.#catalog, this.requests.map((r) => r.fr), this.#usage);
  }

  /**
   * A new `QuotaView` of the preemptor's whole cohort tree on every flavor-resource (the
   * request's `tree-usage`), when the policy needs `treeUsage`; `undefined` otherwise.
   * @returns {QuotaView | undefined}
   */
  treeUsageView() {
    const tree = this.raw.treeUsage;
    return tree === undefined || tree === null ? undefined : QuotaView.fromUsageTable(this.#catalog, tree);
  }

  /**
   * The node of the preemptor's ClusterQueue in the quota tree.
   * @returns {number | undefined}
   */
  get preemptorNode() {
    return this.#catalog.clusterQueueNode(this.preemptor.clusterQueue);
  }
}

// --- The policy and its export ------------------------------------------------------------

/**
 * A preemption policy: what `exportPreemption` takes. Only `selectVictims` is required.
 * @typedef {object} PreemptionPolicy
 * @property {(catalog: Catalog) => void} [catalogChanged] called after each new catalog
 *   (before the next decision): the place to read settings.
 * @property {(catalog: Catalog) => Needs} [needs] what the policy reads beyond its requests,
 *   asked after each new catalog (after `catalogChanged`). Default `{ identity: true,
 *   podSets: true }`; Kueue's own selection reads neither (`kueue.preemptionNeeds(catalog)`).
 * @property {(catalog: Catalog, request: Request) => Answer} selectVictims the answer for one
 *   preemptor: `noVictims`, `victims(indices, allowBorrowing)` or `kueueAmong(indices)`.
 */

/**
 * The WIT interface `wasq:policy/preemption` of a policy: export it from the plugin's entry
 * module as `export const preemption = exportPreemption(new MyPolicy())`. Every call keeps the
 * instance's tables (strings, admitted workloads, kept usage) before the policy runs, and an
 * exception is logged at error level through the host, then thrown again (the host falls back
 * to its built-in policy for that call).
 * @param {PreemptionPolicy} policy
 */
export function exportPreemption(policy) {
  checkPolicy(policy, 'preemption', ['selectVictims'], ['catalogChanged', 'needs']);
  const state = new PluginState();
  let rows = new RowTable();
  let kept = new KeptUsage(state.catalog);
  return {
    /**
     * @param {import('wasq:policy/types@1.1.0').Catalog} catalog
     * @returns {Required<Needs>}
     */
    setCatalog(catalog) {
      return reported('set-catalog', () => {
        // Rows and usage name the previous catalog's queues; the host starts again too.
        rows = new RowTable();
        state.setCatalog(catalog);
        kept = new KeptUsage(state.catalog);
        policy.catalogChanged?.(state.catalog);
        return normalizeNeeds(policy.needs ? policy.needs(state.catalog) : DEFAULT_NEEDS);
      });
    },
    /**
     * @param {import('wasq:policy/types@1.1.0').NewStrings | undefined} strings
     * @param {NewRows | undefined} newRows
     * @param {RawRequest[]} requests
     * @returns {Answer[]}
     */
    selectVictims(strings, newRows, requests) {
      return reported('select-victims', () => {
        state.strings.add(strings);
        rows.add(newRows);
        const catalog = state.catalog;
        let filed = 0;
        const file = (/** @type {number} */ upTo) => {
          for (; filed < upTo; filed++) {
            const r = requests[filed];
            if (r.usageKept) kept.receive(r.usage, r.requests);
          }
        };
        try {
          return requests.map((raw, i) => {
            // Filed before the policy looks: the requests after it rely on it.
            file(i + 1);
            const request = new Request(catalog, raw, rows, kept);
            return checkAnswer(policy.selectVictims(catalog, request), request.candidates.length);
          });
        } finally {
          // A failing request leaves what the host sent kept all the same.
          file(requests.length);
        }
      });
    },
  };
}
