/// <reference path="./wasq-policy-types.d.ts" />
declare module 'wasq:policy/ordering@1.1.0' {
  /**
   * Receives the catalog. Called before the first decision of an instance and whenever the
   * catalog changes; the plugin keeps what it needs and answers what else it reads.
   */
  export function setCatalog(catalog: Catalog): Needs;
  /**
   * The sort key of each workload, one per workload in the order given. A batch holds
   * every workload submitted or requeued since the last cycle (thousands at a time).
   * `strings` extends the instance's string table first (see `new-strings`).
   * `local-queue-usage` holds the LocalQueues of the batch when the plugin needs it (else
   * it is empty). `now` is the scheduler's clock at queueing time.
   */
  export function sortKeys(strings: NewStrings | undefined, workloads: Array<Workload>, localQueueUsage: Array<LocalQueueUsage>, now: Millis): Array<SortKey>;
  /**
   * The order in which this cycle's heads are tried: their workloads, every head's exactly
   * once, first tried first. Earlier heads take quota first.
   * 
   * `strings` extends the instance's string table first (see `new-strings`), then
   * `new-heads` its table of heads (`none` when the call adds no head). `heads` are this
   * cycle's heads, each by its entry in the table of heads (the workload, its queues,
   * priority, times, the key it was queued under, requeue history and who it is), in the
   * host's order: by ClusterQueue, or, when the host asks again for the rest of a cohort
   * tree, in the order of the previous answer. Equal heads keep that order under Kueue's
   * rules. `groups` say how each head was assigned: every head is in exactly one group.
   * `head-usage` holds the quota each head's assignment takes, and `tree-usage` every node
   * of the cohort trees of the heads, when the plugin needs them (`needs.tree-usage`; else
   * `none`); the order is then speculative (see there).
   */
  export function orderHeads(strings: NewStrings | undefined, newHeads: NewHeads | undefined, heads: Uint32Array, groups: Array<HeadGroup>, headUsage: Array<HeadUsage> | undefined, treeUsage: Array<NodeUsage> | undefined, now: Millis): Uint32Array;
  export type Catalog = import('wasq:policy/types@1.1.0').Catalog;
  export type NewStrings = import('wasq:policy/types@1.1.0').NewStrings;
  export type Workload = import('wasq:policy/types@1.1.0').Workload;
  export type WorkloadIdentity = import('wasq:policy/types@1.1.0').WorkloadIdentity;
  export type RequeueReason = import('wasq:policy/types@1.1.0').RequeueReason;
  export type WorkloadId = import('wasq:policy/types@1.1.0').WorkloadId;
  export type ClusterQueueId = import('wasq:policy/types@1.1.0').ClusterQueueId;
  export type LocalQueueId = import('wasq:policy/types@1.1.0').LocalQueueId;
  export type Millis = import('wasq:policy/types@1.1.0').Millis;
  export type FrAmount = import('wasq:policy/types@1.1.0').FrAmount;
  export type Needs = import('wasq:policy/types@1.1.0').Needs;
  export type NodeUsage = import('wasq:policy/types@1.1.0').NodeUsage;
  export type LocalQueueUsage = import('wasq:policy/types@1.1.0').LocalQueueUsage;
  /**
   * What a workload is queued under: workloads are popped smallest key first, comparing
   * `primary`, then `secondary`, then `tertiary`; equal keys keep the host's order (by
   * workload handle). Kueue's key: (-priority, creation time, 0).
   */
  export interface SortKey {
    /**
     * Compared first (Kueue: the negated priority).
     */
    primary: bigint,
    /**
     * Compared when `primary` is equal (Kueue: the creation time).
     */
    secondary: bigint,
    /**
     * Compared when both are equal (Kueue: 0).
     */
    tertiary: bigint,
  }
  /**
   * A head of the instance's table of heads (see `new-heads`).
   */
  export type HeadId = number;
  /**
   * What ordering reads of a workload at the head of its ClusterQueue that does not change
   * while it stays queued under one key: one entry of the instance's table of heads.
   */
  export interface HeadInfo {
    /**
     * The workload at the head.
     */
    workload: WorkloadId,
    /**
     * The ClusterQueue whose head it is.
     */
    clusterQueue: ClusterQueueId,
    /**
     * Its LocalQueue; `none` when it has none the host knows.
     */
    localQueue?: LocalQueueId,
    /**
     * Effective priority (`workload.priority`).
     */
    priority: bigint,
    /**
     * Creation time (`workload.created`).
     */
    created: Millis,
    /**
     * When it last entered its queue (`workload.queued`).
     */
    queued: Millis,
    /**
     * The key it was queued under, as its ClusterQueue's ordering binding computed it
     * (this plugin unless a ClusterQueue annotation binds another; the built-in key if
     * that call failed), so that head order can agree with queue order without the plugin
     * remembering anything.
     */
    key: SortKey,
    /**
     * `workload.requeue-count`.
     */
    requeueCount: number,
    /**
     * `workload.requeue-reason`.
     */
    requeueReason?: RequeueReason,
    /**
     * Who the workload is; `none` unless the plugin's `needs` include `identity`.
     */
    identity?: WorkloadIdentity,
  }
  /**
   * Heads the host adds to the instance's table of heads: the second parameter of
   * `order-heads`, added before its heads are read.
   * 
   * A workload stays at the head of its ClusterQueue for cycle after cycle while it waits,
   * and nothing of its `head-info` changes meanwhile; so its entry crosses once, the first
   * cycle it is a head, and every cycle after that names it by its `head-id`. The table
   * belongs to the plugin instance and only grows: head `first + k` is `heads[k]`, and every
   * `head-id` the same call sends (and later calls, until the table starts again) indexes
   * it. A workload queued again (after an eviction, or under a new key) gets a new entry.
   * The table starts again — `first` is 0, and the instance drops every head it holds
   * before adding `heads` — on the instance's first `order-heads` call, after every
   * `set-catalog`, whenever the string table starts again (`new-strings`: identities name
   * strings), and whenever the host decides the table has grown too large (16,384 heads). A
   * call with `first` different from 0 and from the number of heads the instance holds
   * never happens (the SDK then puts `heads` at `first` and reads heads it never received as
   * an empty head: workload 0, ClusterQueue 0).
   */
  export interface NewHeads {
    /**
     * The id of `heads[0]`: the number of heads the instance held before this call, or 0
     * to start a new table.
     */
    first: HeadId,
    /**
     * The heads added, in id order.
     */
    heads: Array<HeadInfo>,
  }
  /**
   * This cycle's heads that share how they were assigned: most cycles have a handful of
   * groups, and one head per ClusterQueue.
   */
  export interface HeadGroup {
    /**
     * The heads already hold quota and are on their second pass (Kueue's two-phase
     * admission); Kueue handles these first.
     */
    secondPass: boolean,
    /**
     * How high in the cohort tree their assignments borrow: 0 = within the ClusterQueue's
     * nominal quota, 1 = from its cohort, 2 = from the cohort's parent, and so on.
     */
    borrowingLevel: number,
    /**
     * The group's heads (see `order-heads.heads`).
     */
    heads: Uint32Array,
  }
  /**
   * The quota one head's assignment takes.
   */
  export interface HeadUsage {
    /**
     * The head.
     */
    head: HeadId,
    /**
     * What its assignment takes, per flavor-resource, each at most once.
     */
    usage: Array<FrAmount>,
  }
}
