declare module 'wasq:policy/types@1.1.0' {
  /**
   * Milliseconds since the Unix epoch on the scheduler's clock.
   */
  export type Millis = bigint;
  /**
   * A resource amount in milli-units.
   */
  export type Quantity = bigint;
  /**
   * Index into `catalog.resources` (for example `cpu`, `memory`, `nvidia.com/gpu`).
   */
  export type ResourceId = number;
  /**
   * Index into `catalog.flavors`.
   */
  export type FlavorId = number;
  /**
   * Index into `catalog.flavor-resources`: one (flavor, resource) pair that some quota names.
   */
  export type FrId = number;
  /**
   * Index into `catalog.nodes`: a ClusterQueue or a Cohort of the quota tree.
   */
  export type NodeId = number;
  /**
   * Index into `catalog.cluster-queues`.
   */
  export type ClusterQueueId = number;
  /**
   * Index into `catalog.local-queues`.
   */
  export type LocalQueueId = number;
  /**
   * Index into `catalog.annotation-keys`.
   */
  export type AnnotationKey = number;
  /**
   * Index into this plugin instance's string table (see `new-strings`): the namespaces,
   * job kinds, apiVersions and names, and the label and annotation keys and values of
   * workloads.
   */
  export type StringId = number;
  /**
   * A workload handle: stable for the workload's lifetime, never reused for another
   * workload while the process runs. Not an index into anything the plugin holds.
   */
  export type WorkloadId = number;
  /**
   * One annotation of a ResourceFlavor, ClusterQueue or Cohort (catalog objects) that the
   * administrator exposes to plugins (`exposeAnnotations` in the wasq configuration, plus the
   * keys under `kueue.x-k8s.io/` and `wasq.dev/`). Other annotations are never sent.
   * Workloads' annotations are interned instead (`record entry`).
   */
  export interface Annotation {
    /**
     * The annotation's key, as an index into `catalog.annotation-keys`.
     */
    key: AnnotationKey,
    /**
     * The value, verbatim.
     */
    value: string,
  }
  /**
   * Strings the host adds to this instance's string table before a decision: the first
   * parameter of `sort-keys`, `order-heads`, `select-victims`, `choose-flavors` and
   * `place`, `none` when the call adds no string (the table stays as it is).
   * 
   * The table belongs to the plugin instance and only grows: string `first + k` is
   * `values[k]`, and every `string-id` the same call sends (and later calls, until the
   * table starts again) indexes it. A string is sent once per table; an id never changes
   * meaning within a table. The table starts again — `first` is 0, and the instance drops
   * every string it holds before adding `values` — with the first strings the instance
   * receives, and with the first strings sent after the host decides the table has grown
   * too large (more than 262,144 strings or 16 MiB of text: workload names come and go).
   * Until then the instance keeps the table it has, but no call refers to it. A call with
   * `first` different from 0 and from the number of strings the instance holds never happens
   * (the SDK then puts `values` at `first` and reads ids it never received as empty strings,
   * rather than trap). A plugin
   * that remembers something across calls keeps the strings, not their ids: after a restart
   * an old id may name another string.
   */
  export interface NewStrings {
    /**
     * The id of `values[0]`: the number of strings the instance held before this call,
     * or 0 to start a new table.
     */
    first: StringId,
    /**
     * The strings added, in id order; never empty from the host (a call that adds no
     * string sends `none`).
     */
    values: Array<string>,
  }
  /**
   * One label or annotation of a workload, key and value interned. Only keys the plugin's
   * allow-list passes are sent: every key under `kueue.x-k8s.io/` and `wasq.dev/`, plus the
   * keys listed in the wasq configuration (`exposeAnnotations` for annotations, and per
   * plugin `pluginMetadata.<name>.labels` / `.annotations`; exact keys, or prefixes ending
   * in `/`).
   */
  export interface Entry {
    /**
     * The label's or annotation's key, for example `kueue.x-k8s.io/job-uid`.
     */
    key: StringId,
    /**
     * Its value, verbatim.
     */
    value: StringId,
  }
  /**
   * The job that owns a workload: the Workload's controller ownerReference (for example
   * kind `Job`, api-version `batch/v1`, or `RayJob`, `ray.io/v1`).
   */
  export interface Owner {
    /**
     * `kind`, for example `Job`, `JobSet`, `RayJob`, `Notebook`.
     */
    kind: StringId,
    /**
     * `apiVersion`, group and version, for example `batch/v1`.
     */
    apiVersion: StringId,
    /**
     * The job's `metadata.name` (in the workload's namespace).
     */
    name: StringId,
  }
  /**
   * An amount of one resource.
   */
  export interface ResourceAmount {
    /**
     * The resource.
     */
    resource: ResourceId,
    /**
     * How much of it, in milli-units.
     */
    amount: Quantity,
  }
  /**
   * An amount of one flavor-resource (quota is kept per flavor and resource).
   */
  export interface FrAmount {
    /**
     * The flavor-resource.
     */
    fr: FrId,
    /**
     * How much of it, in milli-units.
     */
    amount: Quantity,
  }
  /**
   * A (flavor, resource) pair.
   */
  export interface FlavorResource {
    /**
     * The ResourceFlavor.
     */
    flavor: FlavorId,
    /**
     * The resource.
     */
    resource: ResourceId,
  }
  /**
   * A ResourceFlavor.
   */
  export interface Flavor {
    /**
     * `metadata.name`.
     */
    name: string,
    /**
     * Exposed annotations of the ResourceFlavor (for example a cost per hour).
     */
    annotations: Array<Annotation>,
  }
  /**
   * Whether a quota-tree node is a ClusterQueue (a leaf) or a Cohort.
   * # Variants
   * 
   * ## `"cluster-queue"`
   * 
   * ## `"cohort"`
   */
  export type NodeKind = 'cluster-queue' | 'cohort';
  /**
   * The quota a node declares for one flavor-resource, with the figures Kueue derives from it.
   */
  export interface Quota {
    /**
     * The flavor-resource these figures are for.
     */
    fr: FrId,
    /**
     * `nominalQuota` (for a Cohort, its own `resourceGroups` quota; 0 when it has none).
     */
    nominal: Quantity,
    /**
     * `borrowingLimit`: how much more than `subtree` the node may take from its parent;
     * `none` = unlimited.
     */
    borrowingLimit?: Quantity,
    /**
     * `lendingLimit`: how much of `subtree` the node lends to its parent; `none` = all.
     */
    lendingLimit?: Quantity,
    /**
     * Subtree quota: `nominal` plus what the children lend up (for a ClusterQueue, equal to
     * `nominal`). A node "borrows" when its usage exceeds this.
     */
    subtree: Quantity,
    /**
     * Guaranteed (local) quota: `subtree - lending-limit`, clamped at 0; the part of the
     * subtree quota never lent to the parent (0 when no lending limit). Usage above it
     * counts in the parent's usage.
     */
    guaranteed: Quantity,
  }
  /**
   * A node of the quota tree (a forest: each root Cohort, or each ClusterQueue without a
   * cohort, is a root).
   */
  export interface Node {
    /**
     * The ClusterQueue's or Cohort's name.
     */
    name: string,
    /**
     * Whether it is a ClusterQueue or a Cohort.
     */
    kind: NodeKind,
    /**
     * The parent Cohort; `none` for a root.
     */
    parent?: NodeId,
    /**
     * 0 for a ClusterQueue; 1 + the largest child height for a Cohort.
     */
    height: number,
    /**
     * `spec.fairSharing.weight` in milli-units (1000 when unset).
     */
    fairWeight: Quantity,
    /**
     * Quota per flavor-resource the node declares or receives from its children; a
     * flavor-resource that is absent has all figures 0 and no limits.
     */
    quotas: Array<Quota>,
    /**
     * Exposed annotations of the ClusterQueue or Cohort.
     */
    annotations: Array<Annotation>,
  }
  /**
   * `spec.preemption.withinClusterQueue`.
   * # Variants
   * 
   * ## `"never"`
   * 
   * ## `"lower-priority"`
   * 
   * ## `"lower-or-newer-equal-priority"`
   */
  export type WithinClusterQueue = 'never' | 'lower-priority' | 'lower-or-newer-equal-priority';
  /**
   * `spec.preemption.reclaimWithinCohort`.
   * # Variants
   * 
   * ## `"never"`
   * 
   * ## `"lower-priority"`
   * 
   * ## `"any"`
   */
  export type ReclaimWithinCohort = 'never' | 'lower-priority' | 'any';
  /**
   * `spec.preemption.borrowWithinCohort.policy`.
   * # Variants
   * 
   * ## `"never"`
   * 
   * ## `"lower-priority"`
   */
  export type BorrowWithinCohort = 'never' | 'lower-priority';
  /**
   * A ClusterQueue's `spec.preemption`, defaults applied.
   */
  export interface PreemptionConfig {
    /**
     * `withinClusterQueue`: which of its own queue's workloads a preemptor may evict.
     */
    withinClusterQueue: WithinClusterQueue,
    /**
     * `reclaimWithinCohort`: which workloads of other queues borrowing from the cohort it
     * may evict to reclaim its nominal quota.
     */
    reclaimWithinCohort: ReclaimWithinCohort,
    /**
     * `borrowWithinCohort.policy`: whether it may evict in the cohort while borrowing.
     */
    borrowWithinCohort: BorrowWithinCohort,
    /**
     * `borrowWithinCohort.maxPriorityThreshold`.
     */
    maxPriorityThreshold?: number,
  }
  /**
   * `whenCanBorrow` / `whenCanPreempt` of `spec.flavorFungibility`.
   * # Variants
   * 
   * ## `"may-stop-search"`
   * 
   * Stop at this flavor.
   * ## `"try-next-flavor"`
   * 
   * Look at the next flavor first.
   */
  export type FungibilityPolicy = 'may-stop-search' | 'try-next-flavor';
  /**
   * `spec.flavorFungibility.preference`: which of two imperfect flavors is better.
   * # Variants
   * 
   * ## `"borrowing-over-preemption"`
   * 
   * ## `"preemption-over-borrowing"`
   */
  export type FungibilityPreference = 'borrowing-over-preemption' | 'preemption-over-borrowing';
  /**
   * A ClusterQueue's `spec.flavorFungibility`, defaults applied.
   */
  export interface Fungibility {
    /**
     * `whenCanBorrow`: stop at a flavor where the podSet fits by borrowing, or try the next.
     */
    whenCanBorrow: FungibilityPolicy,
    /**
     * `whenCanPreempt`: stop at a flavor where it fits by preempting, or try the next.
     */
    whenCanPreempt: FungibilityPolicy,
    /**
     * `preference`: which of two imperfect flavors wins.
     */
    preference: FungibilityPreference,
  }
  /**
   * `spec.queueingStrategy`.
   * # Variants
   * 
   * ## `"strict-fifo"`
   * 
   * ## `"best-effort-fifo"`
   */
  export type QueueingStrategy = 'strict-fifo' | 'best-effort-fifo';
  /**
   * One entry of `spec.resourceGroups`.
   */
  export interface ResourceGroup {
    /**
     * `coveredResources`.
     */
    covered: Uint32Array,
    /**
     * The group's flavors, in the ClusterQueue's order.
     */
    flavors: Uint32Array,
  }
  /**
   * A ClusterQueue.
   */
  export interface ClusterQueue {
    /**
     * `metadata.name`.
     */
    name: string,
    /**
     * Its node in the quota tree.
     */
    node: NodeId,
    /**
     * `spec.preemption`, defaults applied.
     */
    preemption: PreemptionConfig,
    /**
     * `spec.flavorFungibility`, defaults applied.
     */
    fungibility: Fungibility,
    /**
     * `spec.queueingStrategy`.
     */
    queueingStrategy: QueueingStrategy,
    /**
     * `spec.resourceGroups`, in order.
     */
    resourceGroups: Array<ResourceGroup>,
    /**
     * `admissionScope.admissionMode: UsageBasedAdmissionFairSharing` with admission fair
     * sharing configured: its queue is ordered by LocalQueue usage first.
     */
    admissionFairSharing: boolean,
  }
  /**
   * A LocalQueue.
   */
  export interface LocalQueue {
    /**
     * `metadata.namespace`.
     */
    namespace: string,
    /**
     * `metadata.name`.
     */
    name: string,
    /**
     * The ClusterQueue it points to (`none` when that ClusterQueue does not exist).
     */
    clusterQueue?: ClusterQueueId,
    /**
     * `spec.fairSharing.weight` in milli-units (1000 when unset), for admission fair
     * sharing.
     */
    fairWeight: Quantity,
  }
  /**
   * A fair-sharing preemption strategy (Kueue's `fairSharing.preemptionStrategies`).
   * # Variants
   * 
   * ## `"less-than-or-equal-to-final-share"`
   * 
   * Rule S2-a: preempt if the preemptor's share after admission is at most the target
   * ClusterQueue's share after losing the victim.
   * ## `"less-than-initial-share"`
   * 
   * Rule S2-b: preempt if the preemptor's share after admission is below the target's
   * share before preemption.
   */
  export type FairSharingStrategy = 'less-than-or-equal-to-final-share' | 'less-than-initial-share';
  /**
   * Kueue's `fairSharing` configuration: present when fair sharing is on.
   */
  export interface FairSharing {
    /**
     * The strategies, in order, Kueue's default applied (never empty).
     */
    strategies: Array<FairSharingStrategy>,
  }
  /**
   * Kueue's `admissionFairSharing` configuration: present when admission fair sharing is on.
   */
  export interface AdmissionFairSharing {
    /**
     * `usageHalfLifeTime` in milliseconds (0: consumed usage never decays into account).
     */
    halfLife: Millis,
    /**
     * `usageSamplingInterval` in milliseconds.
     */
    samplingInterval: Millis,
    /**
     * `resourceWeights`, indexed by `resource-id` (1.0 for resources not named).
     */
    resourceWeights: Float64Array,
  }
  /**
   * What a plugin reads beyond its requests; returned by `set-catalog` so that the host
   * prepares (and sends) only that.
   */
  export interface Needs {
    /**
     * The usage of every node of the cohort trees concerned (`tree-usage` in
     * `order-heads` and in preemption requests), and for `order-heads` the quota each
     * head's assignment takes (`head-usage`). For `order-heads` this also makes the order
     * speculative: it must assume every head, in turn, takes its `head-usage`; when one
     * does not, the host asks again for the remaining heads of that head's cohort tree
     * (heads of other trees keep their places: no usage of theirs changed).
     */
    treeUsage?: boolean,
    /**
     * `local-queue-usage` in `sort-keys`. The host also asks for new keys of the workloads
     * queued in ClusterQueues with `admission-fair-sharing` whenever that usage changes.
     */
    localQueueUsage?: boolean,
    /**
     * Who workloads are: `workload.identity`, `ordering.head-info.identity` and
     * `preemption.admitted-row.identity` (namespaces, owning jobs, labels and annotations).
     * Without it these are `none`. (Flavor-assignment and placement plugins answer no `needs`:
     * their requests always carry `workload.identity`.)
     */
    identity?: boolean,
    /**
     * What workloads request: `workload.pod-sets` in `sort-keys` and in a preemption
     * request's `preemptor`. Without it these are `none`. (Flavor-assignment and
     * placement requests always carry them; preemption candidates carry what each holds,
     * `usage-*`, either way.)
     */
    podSets?: boolean,
  }
  /**
   * The quota usage of one quota-tree node.
   */
  export interface NodeUsage {
    /**
     * The ClusterQueue or Cohort.
     */
    node: NodeId,
    /**
     * Usage per flavor-resource, each at most once; a flavor-resource not listed has
     * usage 0. For a cohort, the usage its children take beyond their guaranteed quota.
     */
    usage: Array<FrAmount>,
  }
  /**
   * Admission fair sharing's figures for one LocalQueue.
   */
  export interface LocalQueueUsage {
    /**
     * The LocalQueue these figures are of.
     */
    localQueue: LocalQueueId,
    /**
     * Consumed resources, decayed with the half-life, in units (1 CPU = 1.0), indexed by
     * `resource-id` (one entry per catalog resource).
     */
    consumed: Float64Array,
    /**
     * Entry penalties of admissions since the last sample, in units, by `resource-id`
     * (one entry per catalog resource); the next sample folds them into `consumed`.
     */
    penalty: Float64Array,
    /**
     * Kueue's LocalQueue usage: `Σ_r weight_r · (consumed_r + penalty_r) / fair-weight`
     * (+inf for a weight of 0).
     */
    weighted: number,
  }
  /**
   * One plugin setting (in `catalog.settings`, and in `dispatch.set-settings`).
   */
  export interface Setting {
    /**
     * The setting's name, as written under `pluginSettings.<plugin>`.
     */
    key: string,
    /**
     * Its value, as written (a string; the plugin parses it).
     */
    value: string,
  }
  /**
   * Everything named once. The host sends it before the first decision of a plugin instance
   * and again whenever it changes (`generation` increases); every index in a request refers
   * to the latest catalog.
   */
  export interface Catalog {
    /**
     * Increases whenever the catalog changes.
     */
    generation: bigint,
    /**
     * Resource names; `resource-id` indexes this list.
     */
    resources: Array<string>,
    /**
     * ResourceFlavors; `flavor-id` indexes this list.
     */
    flavors: Array<Flavor>,
    /**
     * Flavor-resource pairs; `fr-id` indexes this list.
     */
    flavorResources: Array<FlavorResource>,
    /**
     * The quota tree; `node-id` indexes this list. Parents may come after their children.
     */
    nodes: Array<Node>,
    /**
     * ClusterQueues; `cluster-queue-id` indexes this list.
     */
    clusterQueues: Array<ClusterQueue>,
    /**
     * LocalQueues; `local-queue-id` indexes this list.
     */
    localQueues: Array<LocalQueue>,
    /**
     * Exposed annotation keys of the catalog's flavors and nodes; `annotation-key` indexes
     * this list.
     */
    annotationKeys: Array<string>,
    /**
     * This plugin's settings from the wasq configuration (`pluginSettings.<name>`), as
     * written there; empty when none are configured.
     */
    settings: Array<Setting>,
    /**
     * Fair sharing, when Kueue's configuration turns it on.
     */
    fairSharing?: FairSharing,
    /**
     * Admission fair sharing, when Kueue's configuration turns it on.
     */
    admissionFairSharing?: AdmissionFairSharing,
  }
  /**
   * One podSet of a workload.
   */
  export interface PodSet {
    /**
     * Pods requested (`count`).
     */
    count: number,
    /**
     * `minCount` for partial admission; `none` when the podSet is not reducible.
     */
    minCount?: number,
    /**
     * Requests of one pod, by resource.
     */
    perPod: Array<ResourceAmount>,
  }
  /**
   * Why a workload was evicted and queued again (the reason of the Workload's `Evicted`
   * condition).
   * # Variants
   * 
   * ## `"preempted"`
   * 
   * Preempted to make room for another workload (`Preempted`).
   * ## `"admission-check"`
   * 
   * An admission check was set to `Retry` (`AdmissionCheck`).
   * ## `"pods-ready-timeout"`
   * 
   * Its pods were not ready within `waitForPodsReady.timeout` (`PodsReadyTimeout`).
   */
  export type RequeueReason = 'preempted' | 'admission-check' | 'pods-ready-timeout';
  /**
   * Who a workload is: sent to plugins whose `needs` include `identity`.
   */
  export interface WorkloadIdentity {
    /**
     * The Workload's namespace.
     */
    namespace: StringId,
    /**
     * The job that owns it; `none` for a Workload without a controller ownerReference
     * (created by hand).
     */
    owner?: Owner,
    /**
     * The Workload's labels the allow-list passes, by key.
     */
    labels: Array<Entry>,
    /**
     * The Workload's annotations the allow-list passes, by key.
     */
    annotations: Array<Entry>,
  }
  /**
   * What a plugin knows of a pending workload.
   */
  export interface Workload {
    /**
     * Its handle.
     */
    id: WorkloadId,
    /**
     * Who it is (namespace, owning job, labels, annotations); `none` unless the plugin's
     * `needs` include `identity`.
     */
    identity?: WorkloadIdentity,
    /**
     * The ClusterQueue it is queued in (or, for a preemptor, is being admitted to).
     */
    clusterQueue: ClusterQueueId,
    /**
     * Its LocalQueue (`catalog.local-queues`: namespace and name); `none` when the
     * workload was restored without a LocalQueue the host knows.
     */
    localQueue?: LocalQueueId,
    /**
     * Effective priority: the priority class value plus Kueue's
     * `kueue.x-k8s.io/priority-boost` annotation.
     */
    priority: bigint,
    /**
     * Creation time: Kueue's queue-order timestamp.
     */
    created: Millis,
    /**
     * When the workload last entered its queue: its creation time, or the first scheduling
     * cycle after its last eviction completed.
     */
    queued: Millis,
    /**
     * How often the workload was evicted and queued again: preempted, sent back by an
     * admission check in `Retry`, or evicted by the PodsReady timeout (0 = never). Kept
     * for the workload's lifetime, also while it is admitted.
     */
    requeueCount: number,
    /**
     * Why it was last evicted and queued again; `none` when it never was
     * (`requeue-count` = 0).
     */
    requeueReason?: RequeueReason,
    /**
     * Its podSets, in the Workload's order; `none` in `sort-keys` and a preemption
     * request's `preemptor` unless the plugin's `needs` include `pod-sets` (always present
     * for flavor assignment and placement).
     */
    podSets?: Array<PodSet>,
  }
  /**
   * Severity of a `log` line.
   * # Variants
   * 
   * ## `"trace"`
   * 
   * ## `"debug"`
   * 
   * ## `"info"`
   * 
   * ## `"warn"`
   * 
   * ## `"error"`
   */
  export type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error';
}
