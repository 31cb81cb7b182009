/// <reference path="./wasq-policy-types.d.ts" />
declare module 'wasq:policy/dispatch@1.1.0' {
  /**
   * Receives this plugin's settings from the wasq configuration (`pluginSettings.<name>`,
   * or a QueuePolicy's `settings`), as written there; empty when none are configured. The
   * host calls it once per instance, before the instance's first `dispatch` (the other
   * interfaces get their settings in the catalog, which dispatch has none of). Settings do
   * not change during an instance's life: a changed configuration makes a new instance.
   */
  export function setSettings(settings: Array<Setting>): void;
  /**
   * One answer per request, in order. Requests of one call are about different workloads
   * and never depend on each other; the host usually sends one.
   */
  export function dispatch(requests: Array<Request>): Array<Answer>;
  export type Millis = import('wasq:policy/types@1.1.0').Millis;
  export type Quantity = import('wasq:policy/types@1.1.0').Quantity;
  export type Setting = import('wasq:policy/types@1.1.0').Setting;
  /**
   * One label: key and value, verbatim.
   */
  export interface Label {
    /**
     * The label's key, for example `topology.example.com/region`.
     */
    key: string,
    /**
     * Its value.
     */
    value: string,
  }
  /**
   * An amount of one named resource.
   */
  export interface NamedQuantity {
    /**
     * The resource's name, for example `cpu`, `memory`, `nvidia.com/gpu`.
     */
    name: string,
    /**
     * How much, in milli-units (1 CPU = 1000, 1 GiB = 1073741824000).
     */
    amount: Quantity,
  }
  /**
   * One podSet of the workload.
   */
  export interface PodSet {
    /**
     * The podSet's name, as in the Workload.
     */
    name: string,
    /**
     * Pods requested (`count`).
     */
    count: number,
    /**
     * What one pod requests, per resource (each resource at most once, in name order).
     */
    perPod: Array<NamedQuantity>,
  }
  /**
   * The workload to dispatch, as the manager holds it.
   */
  export interface Workload {
    /**
     * The Workload's namespace (the same on every worker).
     */
    namespace: string,
    /**
     * The Workload's name (its copies on the workers have the same).
     */
    name: string,
    /**
     * Its LocalQueue's name: each worker's LocalQueue of that namespace and name receives
     * the copy.
     */
    localQueue: string,
    /**
     * Its priority (the priority class value).
     */
    priority: number,
    /**
     * Creation time.
     */
    created: Millis,
    /**
     * When it reserved quota on the manager.
     */
    reserved: Millis,
    /**
     * Its podSets, in the Workload's order.
     */
    podSets: Array<PodSet>,
    /**
     * The Workload's labels the plugin's allow-list passes (every key under
     * `kueue.x-k8s.io/` and `wasq.dev/`, plus its `pluginMetadata.<name>.labels`), in key
     * order.
     */
    labels: Array<Label>,
  }
  /**
   * One flavor-resource of a worker's ClusterQueue, in milli-units.
   */
  export interface WorkerResource {
    /**
     * The ResourceFlavor's name on that worker.
     */
    flavor: string,
    /**
     * The resource's name.
     */
    resource: string,
    /**
     * The ClusterQueue's nominal quota of it.
     */
    nominal: Quantity,
    /**
     * What the ClusterQueue's admitted workloads use of it.
     */
    usage: Quantity,
  }
  /**
   * What the manager sees of the worker's ClusterQueue that the workload's LocalQueue feeds
   * there.
   */
  export interface WorkerQueue {
    /**
     * The ClusterQueue's name on the worker.
     */
    name: string,
    /**
     * Workloads pending in it.
     */
    pending: number,
    /**
     * Workloads admitted in it.
     */
    admitted: number,
    /**
     * Its quota and usage per flavor-resource.
     */
    resources: Array<WorkerResource>,
  }
  /**
   * One candidate worker: a cluster of the workload's MultiKueueConfig.
   */
  export interface Cluster {
    /**
     * Its MultiKueueCluster's name.
     */
    name: string,
    /**
     * Its MultiKueueCluster's labels, in key order (all of them: the administrator's own
     * objects, as a catalog's are).
     */
    labels: Array<Label>,
    /**
     * Whether the manager has a working connection to it (`Active=True`). Only connected
     * clusters may be added to the nominees (one already nominated may stay).
     */
    connected: boolean,
    /**
     * Since when its connection is lost; `none` when it is connected, or when the host
     * does not know.
     */
    lostSince?: Millis,
    /**
     * The worker's ClusterQueue for the workload; `none` when the manager cannot see it.
     */
    queue?: WorkerQueue,
    /**
     * Since when the workload has a copy there; `none`: no copy.
     */
    copySince?: Millis,
  }
  /**
   * One question: the workload, its candidate clusters, and what was nominated so far.
   */
  export interface Request {
    /**
     * The clock: wall time in `wasq controller`, virtual time in `wasq simulate`.
     */
    now: Millis,
    /**
     * The workload to dispatch.
     */
    workload: Workload,
    /**
     * The clusters of its MultiKueueConfig, in the configuration's order; answers name
     * them by index here.
     */
    clusters: Array<Cluster>,
    /**
     * The nominees so far, in nomination order (indices into `clusters`; a nominee may
     * have been lost since).
     */
    nominated: Uint32Array,
    /**
     * When the nominees last changed (the start of an incremental dispatcher's round);
     * `none` before the first nomination.
     */
    lastNominated?: Millis,
  }
  /**
   * The nominees for one request.
   */
  export interface Answer {
    /**
     * Every nominee, as indices into `request.clusters`: replaces the nominees so far (a
     * cluster left out loses its copy). Each once, at most 20, each connected unless it
     * is already a nominee. Empty:
     * no cluster gets a copy for now.
     */
    nominate: Uint32Array,
    /**
     * Ask again after this many milliseconds even if nothing changes (positive); `none`:
     * only when something does (a worker connects or is lost).
     */
    retryAfter?: Millis,
  }
}
