import { Identified, Workload } from './identity.js';
import { KeptUsage, QuotaView } from './quota.js';
export type Catalog = import('./catalog.js').Catalog;
export type FrAmount = import('wasq:policy/types@1.1.0').FrAmount;
export type Needs = import('wasq:policy/types@1.1.0').Needs;
export type AdmittedRow = import('wasq:policy/preemption@1.1.0').AdmittedRow;
export type NewRows = import('wasq:policy/preemption@1.1.0').NewRows;
export type CandidateKind = import('wasq:policy/preemption@1.1.0').CandidateKind;
export type RawRequest = import('wasq:policy/preemption@1.1.0').Request;
export type Answer = {
    tag: 'no-victims';
} | {
    tag: 'victims';
    val: {
        victims: number[];
        allowBorrowing: boolean;
    };
} | {
    tag: 'kueue-among';
    val: number[];
};
/** @typedef {import('./catalog.js').Catalog} Catalog */
/** @typedef {import('wasq:policy/types@1.1.0').FrAmount} FrAmount */
/** @typedef {import('wasq:policy/types@1.1.0').Needs} Needs */
/** @typedef {import('wasq:policy/preemption@1.1.0').AdmittedRow} AdmittedRow */
/** @typedef {import('wasq:policy/preemption@1.1.0').NewRows} NewRows */
/** @typedef {import('wasq:policy/preemption@1.1.0').CandidateKind} CandidateKind */
/** @typedef {import('wasq:policy/preemption@1.1.0').Request} RawRequest */
/**
 * An answer to one preemption request, as the WIT `answer` variant crosses (jco's mapping).
 * @typedef {{ tag: 'no-victims' }
 *   | { tag: 'victims', val: { victims: number[], allowBorrowing: boolean } }
 *   | { tag: 'kueue-among', val: number[] }} Answer
 */
/** Preemption cannot make the preemptor fit: it waits, and nothing is preempted for it. */
export declare const noVictims: Readonly<{
    readonly tag: 'no-victims';
}>;
/**
 * These victims: indices into `request.candidates` (numbers, or the candidates themselves),
 * each at most once. `allowBorrowing`: whether the preemptor may borrow once they are gone;
 * it must be `false` when a victim is a `reclaim-without-borrowing` candidate. The host checks
 * that they make the preemptor fit, and that none is beyond need.
 * @param {Iterable<number | { index: number }>} indices
 * @param {boolean} allowBorrowing
 * @returns {Answer}
 */
export declare function victims(indices: Iterable<number | {
    index: number;
}>, allowBorrowing: boolean): Answer;
/**
 * Kueue's victims, chosen only among these candidates (indices into `request.candidates`, or
 * the candidates themselves, in any order): the host runs Kueue's selection — classical, or fair
 * sharing's when `catalog.fairSharing` is set — as if the other candidates were not eligible,
 * and answers no victims when those cannot make the preemptor fit.
 * @param {Iterable<number | { index: number }>} indices
 * @returns {Answer}
 */
export declare function kueueAmong(indices: Iterable<number | {
    index: number;
}>): Answer;
/**
 * The instance's table of admitted workloads (`new-rows`): row `first + k` is `rows[k]`;
 * `first == 0` starts a new table. A `first` past the end leaves rows never received between
 * (they read as the empty row); one inside the table replaces the rows from `first` on; the
 * host does neither.
 */
export declare class RowTable {
    #private;
    /** How many rows the table holds. */
    get size(): number;
    /** @param {NewRows | undefined} added */
    add(added: NewRows | undefined): void;
    /**
     * Row `id`, or the empty row when the table does not hold it.
     * @param {number} id
     * @returns {AdmittedRow}
     */
    get(id: number): AdmittedRow;
}
/**
 * An admitted workload that may be preempted: its row joined with what the request says of it.
 */
export declare class Candidate extends Identified {
    /** @type {number} Its position in `request.candidates`: what answers name. */ index: number;
    /** @type {number} Its row in the instance's table (as the host sent it). */ row: number;
    /** @type {number} The workload's handle. */ workload: number;
    /** @type {number} The ClusterQueue it holds its quota in. */ clusterQueue: number;
    /** @type {bigint} Effective priority. */ priority: bigint;
    /** @type {bigint} Creation time (ms). */ created: bigint;
    /** @type {bigint} When its quota was reserved (ms). */ admitted: bigint;
    /** @type {number} How often it was evicted and queued again before this admission. */ requeueCount: number;
    /** @type {import('wasq:policy/types@1.1.0').RequeueReason | undefined} */ requeueReason: import('wasq:policy/types@1.1.0').RequeueReason | undefined;
    /** @type {FrAmount[]} The quota it holds, per flavor-resource. */ usage: FrAmount[];
    /** @type {CandidateKind} How it relates to the preemptor (decides the `Preempted` reason). */ kind: CandidateKind;
    /**
     * @type {number | undefined} For another ClusterQueue's candidate: the cohort under which it
     * was found (or, under fair sharing, the lowest common ancestor); `undefined` for the
     * preemptor's own queue.
     */
    lca: number | undefined;
    /** @type {boolean} Already being evicted (its quota is held until that completes). */ evicting: boolean;
    /** @type {number | undefined} Its LocalQueue's admission-fair-sharing usage, when sent. */ localQueueUsage: number | undefined;
    /**
     * @param {Catalog} catalog
     * @param {number} index
     * @param {number} row
     * @param {AdmittedRow} data
     * @param {Relation} relation
     * @param {number | undefined} localQueueUsage
     */
    constructor(catalog: Catalog, index: number, row: number, data: AdmittedRow, relation: Relation, localQueueUsage: number | undefined);
}
export type Relation = {
    kind: CandidateKind;
    lca: number | undefined;
    evicting: boolean;
};
/**
 * One preemptor and everything needed to choose its victims (`preemption.request`), joined
 * with the instance's tables.
 */
export declare class Request {
    #private;
    /** @type {Workload} The pending workload that needs room. */ preemptor: Workload;
    /** @type {FrAmount[]} What it needs per flavor-resource under the flavors being tried. */ requests: FrAmount[];
    /** @type {number[]} The flavor-resources (of `requests`) where it does not fit without preemption. */ needsPreemption: number[];
    /**
     * @type {Candidate[]} The eligible candidates, in Kueue's candidate order; answers name them
     * by position (`candidate.index`).
     */
    candidates: Candidate[];
    /** @type {bigint} The scheduler's clock at this decision (ms). */ now: bigint;
    /** @type {RawRequest} The request as the host sent it (its `usage` lists only what changed when `usageKept`). */ raw: RawRequest;
    /**
     * @param {Catalog} catalog
     * @param {RawRequest} raw
     * @param {RowTable} rows
     * @param {KeptUsage} kept the instance's kept usage, this request's already filed
     */
    constructor(catalog: Catalog, raw: RawRequest, rows: RowTable, kept: KeptUsage);
    /** Whether the instance keeps the quota usage it receives (the host sends `true`). */
    get usageKept(): boolean;
    /**
     * A new `QuotaView` of this request: its `requests`' flavor-resources, every node's usage as
     * the host has it for this request (what the instance kept merged with this request's
     * changes; or, for a request made with `usageKept: false`, its own `usage` list).
     * @returns {QuotaView}
     */
    quotaView(): QuotaView;
    /**
     * A new `QuotaView` of the preemptor's whole cohort tree on every flavor-resource (the
     * request's `tree-usage`), when the policy needs `treeUsage`; `undefined` otherwise.
     * @returns {QuotaView | undefined}
     */
    treeUsageView(): QuotaView | undefined;
    /**
     * The node of the preemptor's ClusterQueue in the quota tree.
     * @returns {number | undefined}
     */
    get preemptorNode(): number | undefined;
}
export type PreemptionPolicy = {
    /**
     * called after each new catalog
     * (before the next decision): the place to read settings.
     */
    catalogChanged?: (catalog: Catalog) => void;
    /**
     * what the policy reads beyond its requests,
     * asked after each new catalog (after `catalogChanged`). Default `{ identity: true,
     * podSets: true }`; Kueue's own selection reads neither (`kueue.preemptionNeeds(catalog)`).
     */
    needs?: (catalog: Catalog) => Needs;
    /**
     * the answer for one
     * preemptor: `noVictims`, `victims(indices, allowBorrowing)` or `kueueAmong(indices)`.
     */
    selectVictims: (catalog: Catalog, request: Request) => Answer;
};
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
export declare function exportPreemption(policy: PreemptionPolicy): {
    /**
     * @param {import('wasq:policy/types@1.1.0').Catalog} catalog
     * @returns {Required<Needs>}
     */
    setCatalog(catalog: import('wasq:policy/types@1.1.0').Catalog): Required<Needs>;
    /**
     * @param {import('wasq:policy/types@1.1.0').NewStrings | undefined} strings
     * @param {NewRows | undefined} newRows
     * @param {RawRequest[]} requests
     * @returns {Answer[]}
     */
    selectVictims(strings: import('wasq:policy/types@1.1.0').NewStrings | undefined, newRows: NewRows | undefined, requests: RawRequest[]): Answer[];
};
