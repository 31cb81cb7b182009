/// <reference path="./wasq-policy-types.d.ts" />
declare module 'wasq:policy/preemption@1.1.0' {
  /**
   * Receives the catalog (see `ordering.set-catalog`).
   */
  export function setCatalog(catalog: Catalog): Needs;
  /**
   * One answer per request, in order. `strings` extends the instance's string table first
   * (see `new-strings`), then `rows` its table of admitted workloads (see `new-rows`; `none`
   * when the call adds no row).
   */
  export function selectVictims(strings: NewStrings | undefined, rows: NewRows | undefined, requests: Array<Request>): Array<Answer>;
  export type Catalog = import('wasq:policy/types@1.1.0').Catalog;
  export type NewStrings = import('wasq:policy/types@1.1.0').NewStrings;
  export type Workload = import('wasq:policy/types@1.1.0').Workload;
  export type WorkloadIdentity = import('wasq:policy/types@1.1.0').WorkloadIdentity;
  export type RequeueReason = import('wasq:policy/types@1.1.0').RequeueReason;
  export type WorkloadId = import('wasq:policy/types@1.1.0').WorkloadId;
  export type ClusterQueueId = import('wasq:policy/types@1.1.0').ClusterQueueId;
  export type LocalQueueId = import('wasq:policy/types@1.1.0').LocalQueueId;
  export type NodeId = import('wasq:policy/types@1.1.0').NodeId;
  export type FrId = import('wasq:policy/types@1.1.0').FrId;
  export type FrAmount = import('wasq:policy/types@1.1.0').FrAmount;
  export type Millis = import('wasq:policy/types@1.1.0').Millis;
  export type Needs = import('wasq:policy/types@1.1.0').Needs;
  export type NodeUsage = import('wasq:policy/types@1.1.0').NodeUsage;
  /**
   * How a candidate relates to the preemptor (Kueue's preemption variants); it decides the
   * `Preempted` condition's reason.
   * # Variants
   * 
   * ## `"same-queue"`
   * 
   * In the preemptor's own ClusterQueue (reason `InClusterQueue`).
   * ## `"hierarchical-reclaim"`
   * 
   * In a queue over its quota where the preemptor has a hierarchical advantage
   * (reason `InCohortReclamation`).
   * ## `"reclaim-without-borrowing"`
   * 
   * Reclaim allowed only if the preemptor does not borrow afterwards
   * (reason `InCohortReclamation`).
   * ## `"reclaim-while-borrowing"`
   * 
   * Reclaim allowed while the preemptor borrows (reason `InCohortReclaimWhileBorrowing`).
   * ## `"fair-sharing"`
   * 
   * Fair sharing is on and the preemptor would borrow: a workload of a borrowing
   * ClusterQueue of the cohort tree, preemptible as the strategies in
   * `catalog.fair-sharing` allow (reason `InCohortFairSharing`). Under fair sharing, a
   * preemptor within its nominal quota gets `hierarchical-reclaim` candidates instead.
   */
  export type CandidateKind = 'same-queue' | 'hierarchical-reclaim' | 'reclaim-without-borrowing' | 'reclaim-while-borrowing' | 'fair-sharing';
  /**
   * A row of the instance's table of admitted workloads (see `new-rows`).
   */
  export type RowId = number;
  /**
   * What preemption reads of a workload holding quota: one row of the instance's table.
   * Nothing here changes while the workload holds that quota.
   */
  export interface AdmittedRow {
    /**
     * The workload.
     */
    workload: WorkloadId,
    /**
     * The ClusterQueue it holds its quota in.
     */
    clusterQueue: ClusterQueueId,
    /**
     * Its LocalQueue; `none` when it has none the host knows.
     */
    localQueue?: LocalQueueId,
    /**
     * Effective priority.
     */
    priority: bigint,
    /**
     * Creation time.
     */
    created: Millis,
    /**
     * When its quota was reserved (admission time).
     */
    admitted: Millis,
    /**
     * How often the workload was evicted and queued again before this admission
     * (`workload.requeue-count`).
     */
    requeueCount: number,
    /**
     * Why it was last requeued (`workload.requeue-reason`); `none` when it never was.
     */
    requeueReason?: RequeueReason,
    /**
     * The quota it holds, per flavor-resource.
     */
    usage: Array<FrAmount>,
    /**
     * Who the workload is; `none` unless the plugin's `needs` include `identity`.
     */
    identity?: WorkloadIdentity,
  }
  /**
   * Rows the host adds to the instance's table of admitted workloads: the second parameter
   * of `select-victims`, added before its requests are read.
   * 
   * A workload holding quota is a candidate in request after request, and nothing
   * preemption reads of it changes while it holds that quota; so its row crosses once, the
   * first time it is a candidate, and every candidate after that is a `row-id`. The table
   * belongs to the plugin instance and only grows: row `first + k` is `rows[k]`, and every
   * `row-id` the same call sends (and later calls, until the table starts again) indexes it.
   * A workload admitted again (after an eviction) gets a new row. The table starts again —
   * `first` is 0, and the instance drops every row it holds before adding `rows` — on the
   * instance's first `select-victims` call, after every `set-catalog`, whenever the string
   * table starts again (`new-strings`: identities name strings), and whenever the host
   * decides the table has grown too large (16,384 rows). A call with `first` different from
   * 0 and from the number of rows the instance holds never happens (the SDK then puts `rows`
   * at `first` and reads rows it never received as an empty row: workload 0, no quota).
   */
  export interface NewRows {
    /**
     * The id of `rows[0]`: the number of rows the instance held before this call, or 0 to
     * start a new table.
     */
    first: RowId,
    /**
     * The rows added, in id order.
     */
    rows: Array<AdmittedRow>,
  }
  /**
   * Candidates that relate to the preemptor alike. Most requests have a handful of groups,
   * and hundreds of candidates.
   */
  export interface CandidateGroup {
    /**
     * How they relate to the preemptor.
     */
    kind: CandidateKind,
    /**
     * For candidates of another ClusterQueue: the cohort under which they were found
     * (classical reclaim; Kueue only reclaims from queues and cohorts below it that are
     * over their quota) or, under fair sharing, the lowest common ancestor of the two
     * queues. `none` for the preemptor's own queue.
     */
    lca?: NodeId,
    /**
     * Already being evicted: their quota is still held until the eviction completes
     * (usually no candidate is).
     */
    evicting: boolean,
    /**
     * The group's candidates, by their row (see `request.candidates`).
     */
    rows: Uint32Array,
  }
  /**
   * Admission fair sharing's usage of one LocalQueue, as preemption compares it.
   */
  export interface LocalQueueShare {
    /**
     * The LocalQueue.
     */
    localQueue: LocalQueueId,
    /**
     * Its weighted usage (`types.local-queue-usage.weighted`).
     */
    weighted: number,
  }
  /**
   * One preemptor and everything needed to choose its victims.
   */
  export interface Request {
    /**
     * The pending workload that needs room.
     */
    preemptor: Workload,
    /**
     * What it needs per flavor-resource under the flavors being tried.
     */
    requests: Array<FrAmount>,
    /**
     * The flavor-resources (a subset of `requests`) where it does not fit without
     * preemption.
     */
    needsPreemption: Uint32Array,
    /**
     * The eligible candidates, each by its row in the instance's table of admitted
     * workloads (`new-rows`: the workload, its ClusterQueue and LocalQueue, priority,
     * creation and admission times, requeue history, the quota it holds and who it is), in
     * Kueue's candidate order: already being evicted first, other ClusterQueues before the
     * preemptor's own, [admission fair sharing: within one ClusterQueue, LocalQueues with
     * more usage first], lower priority first, most recently admitted first, then by
     * workload handle. Answers name victims by their position in this list.
     */
    candidates: Uint32Array,
    /**
     * How the candidates relate to the preemptor: every candidate's row is in exactly one
     * group.
     */
    groups: Array<CandidateGroup>,
    /**
     * Admission fair sharing's usage of the candidates' LocalQueues, for candidates whose
     * ClusterQueue uses it; empty otherwise.
     */
    localQueueUsage: Array<LocalQueueShare>,
    /**
     * Whether the instance keeps the quota usage it receives. When `true`, `usage` lists
     * the nodes of the preemptor's cohort tree whose usage of these `requests`'
     * flavor-resources the instance does not hold as it now is (every node of the tree
     * the first time), each entry replacing what the instance held for that node and
     * flavor-resource; the other nodes' usage is what the instance received last for
     * them. It keeps every entry until its next `set-catalog` (the SDKs do), and answers
     * as if the request listed them all. Between two requests a cycle admits or evicts a
     * workload or two, which changes a queue and its cohorts, so a request carries a few
     * nodes rather than one per queue, and most carry none. The host sends `true`. When
     * `false` (requests made by hand), `usage` is this request's only: the preemptor's
     * ClusterQueue, every candidate's ClusterQueue, and all their ancestors; nothing is
     * kept.
     */
    usageKept: boolean,
    /**
     * Quota usage of nodes on the `requests`' flavor-resources (see `usage-kept`). Kueue's
     * algorithms read the preemptor's ClusterQueue, every candidate's ClusterQueue, and all
     * their ancestors; ask for `tree-usage` for every node on every flavor-resource.
     */
    usage: Array<NodeUsage>,
    /**
     * Every node of the preemptor's cohort tree on every flavor-resource, when the plugin
     * needs it (`needs.tree-usage`; else `none`).
     */
    treeUsage?: Array<NodeUsage>,
    /**
     * The scheduler's clock at this decision.
     */
    now: Millis,
  }
  /**
   * An answer: the victims, as indices into `request.candidates`.
   */
  export interface Victims {
    /**
     * Indices into `request.candidates`, each at most once.
     */
    victims: Uint32Array,
    /**
     * Whether the preemptor may borrow once the victims are gone. Must be `false` if any
     * victim is a `reclaim-without-borrowing` candidate of another ClusterQueue.
     */
    allowBorrowing: boolean,
  }
  /**
   * The answer to one request.
   */
  export type Answer = AnswerNoVictims | AnswerVictims | AnswerKueueAmong;
  /**
   * Preemption cannot make the preemptor fit: it waits, and nothing is preempted for it.
   */
  export interface AnswerNoVictims {
    tag: 'no-victims',
  }
  /**
   * These victims.
   */
  export interface AnswerVictims {
    tag: 'victims',
    val: Victims,
  }
  /**
   * Kueue's victims, chosen only among these candidates (indices into
   * `request.candidates`, each at most once, in any order): the host runs Kueue's
   * selection — classical, or fair sharing's when `catalog.fair-sharing` is set — as if
   * the other candidates were not eligible, and answers `no-victims` when those cannot
   * make the preemptor fit. This is how a policy narrows Kueue's choice ("never a
   * victim in namespace `prod`") without writing Kueue's algorithm again; the
   * candidates listed are checked as `victims` are.
   */
  export interface AnswerKueueAmong {
    tag: 'kueue-among',
    val: Uint32Array,
  }
}
