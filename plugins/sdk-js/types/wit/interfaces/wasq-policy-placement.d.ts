/// <reference path="./wasq-policy-types.d.ts" />
declare module 'wasq:policy/placement@1.1.0' {
  /**
   * Receives the catalog (see `ordering.set-catalog`).
   */
  export function setCatalog(catalog: Catalog): void;
  /**
   * One answer per request, in order. The host places a workload's podSets one after the
   * other, because the leaves one takes are not free for the next; requests of one call
   * never depend on each other. `strings` extends the instance's string table first (see
   * `new-strings`).
   */
  export function place(strings: NewStrings | undefined, requests: Array<Request>): Array<Answer>;
  export type Catalog = import('wasq:policy/types@1.1.0').Catalog;
  export type NewStrings = import('wasq:policy/types@1.1.0').NewStrings;
  export type Workload = import('wasq:policy/types@1.1.0').Workload;
  export type FlavorId = import('wasq:policy/types@1.1.0').FlavorId;
  export type Quantity = import('wasq:policy/types@1.1.0').Quantity;
  export type StringId = import('wasq:policy/types@1.1.0').StringId;
  export type Millis = import('wasq:policy/types@1.1.0').Millis;
  /**
   * How the podSet's topology request constrains the placement.
   * # Variants
   * 
   * ## `"required"`
   * 
   * Every pod in one domain of `constraint.level`, or not admitted
   * (`podset-required-topology`).
   * ## `"preferred"`
   * 
   * One domain of `constraint.level` if possible, else the fewest domains of the levels
   * above, else across the whole topology (`podset-preferred-topology`).
   * ## `"unconstrained"`
   * 
   * Any leaves (`podset-unconstrained-topology`, a podSet asking only for slices, or a
   * podSet without a request in a ClusterQueue whose flavors are all TAS flavors).
   */
  export type ConstraintMode = 'required' | 'preferred' | 'unconstrained';
  /**
   * One further slice layer: every domain from the level below the previous layer's down
   * to `level` holds a multiple of `size` pods (Kueue's `sliceSizeAtLevel`).
   */
  export interface SliceLayer {
    /**
     * Index into `request.level-names`.
     */
    level: number,
    /**
     * Pods per slice of this layer.
     */
    size: number,
  }
  /**
   * What the podSet asks of the topology, resolved against its levels.
   */
  export interface Constraint {
    /**
     * Index into `request.level-names` of the level the pods should share a domain of
     * (the lowest level when unconstrained).
     */
    level: number,
    /**
     * Whether the level is required, preferred, or no constraint at all.
     */
    mode: ConstraintMode,
    /**
     * Index into `request.level-names`: every slice stays within one domain of this level
     * (`podset-slice-required-topology`; the lowest level without slices). Never above
     * `level`.
     */
    sliceLevel: number,
    /**
     * Pods per slice (`podset-slice-size`; 1 without slices). Divides `request.count`.
     */
    sliceSize: number,
    /**
     * Further slice layers below `slice-level`, outermost first (multi-layer slices: the
     * further entries of Kueue's `podsetSliceRequiredTopologyConstraints`); empty for one
     * layer. Each layer's level is below the previous layer's and its size divides the
     * previous size.
     */
    layers: Array<SliceLayer>,
  }
  /**
   * A domain of the flavor's topology: a value of one of its levels (a block, a rack, a
   * node). Domains are numbered from 0 depth first, in the order of their label values from
   * the highest level down: a domain comes right after its parent's earlier children's
   * subtrees, and the domains of one level are in the order of their values (so a tie
   * between two domains of a level can be broken by their indices, as Kueue breaks it by
   * their values).
   */
  export interface Domain {
    /**
     * Its level, an index into `request.level-names` (0 = the highest).
     */
    level: number,
    /**
     * Its parent (an index into `request.domains`); `none` for a domain of the highest
     * level.
     */
    parent?: number,
    /**
     * Free capacity per resource, one amount per `request.resource-names` entry in that
     * order, in milli-units: a leaf's allocatable minus what admitted workloads use on
     * it, an inner domain's the sum of its leaves'. Leaves the pods may not use count too.
     */
    free: BigInt64Array,
  }
  /**
   * Where pods can go: a node when the lowest level is `kubernetes.io/hostname`, else a
   * domain of the lowest level. Leaves are in the order of their domains.
   */
  export interface Leaf {
    /**
     * Its domain (an index into `request.domains`, a domain of the lowest level).
     */
    domain: number,
    /**
     * Whether the pods may run there (node selector, node affinity, taints and the
     * flavor's tolerations). An ineligible leaf holds no pod.
     */
    eligible: boolean,
  }
  /**
   * One TAS podSet to place.
   */
  export interface Request {
    /**
     * The workload the podSet belongs to (identity and podSets always present).
     */
    workload: Workload,
    /**
     * Index into `workload.pod-sets`.
     */
    podSet: number,
    /**
     * The TAS ResourceFlavor assigned to the podSet.
     */
    flavor: FlavorId,
    /**
     * The flavor's Topology's name (Kueue's messages name it).
     */
    topology: StringId,
    /**
     * The Topology's level labels, highest first (for example
     * `cloud.com/topology-block`, `cloud.com/topology-rack`, `kubernetes.io/hostname`).
     */
    levelNames: Uint32Array,
    /**
     * The capacity columns' resource names, `pods` first (one per pod).
     */
    resourceNames: Uint32Array,
    /**
     * Pods to place.
     */
    count: number,
    /**
     * One pod's request per resource column, in milli-units (`pods` is 1000).
     */
    perPod: BigInt64Array,
    /**
     * A podSet group's leader (`kueue.x-k8s.io/podset-group-name`, e.g. a
     * LeaderWorkerSet's leader podSet of one pod), placed together with the `count`
     * pods: its one pod's request per resource column. The leader goes on an eligible
     * leaf with room for it next to the pods placed there, inside the same domain of a
     * required level. `none` for a podSet without a group.
     */
    leader?: BigInt64Array,
    /**
     * What the podSet's topology request asks.
     */
    constraint: Constraint,
    /**
     * The flavor's domain tree.
     */
    domains: Array<Domain>,
    /**
     * Its leaves; answers name leaves by their index here.
     */
    leaves: Array<Leaf>,
    /**
     * The scheduler's clock at this decision.
     */
    now: Millis,
  }
  /**
   * Pods on one leaf.
   */
  export interface LeafPods {
    /**
     * Index into `request.leaves`.
     */
    leaf: number,
    /**
     * Pods on it, at least 1.
     */
    count: number,
  }
  /**
   * Where the pods (and the leader) go.
   */
  export interface Placement {
    /**
     * Pods per leaf, summing to `request.count`; each leaf at most once.
     */
    pods: Array<LeafPods>,
    /**
     * The leader's leaf (index into `request.leaves`): present exactly when
     * `request.leader` is.
     */
    leader?: number,
  }
  /**
   * A placement, or why there is none.
   */
  export type Answer = AnswerPlaced | AnswerNoFit;
  export interface AnswerPlaced {
    tag: 'placed',
    val: Placement,
  }
  /**
   * The podSet does not fit: the message becomes the workload's pending message (as
   * `couldn't assign flavors to pod set NAME: MESSAGE`). The host appends Kueue's count
   * of the nodes it left out (`. Total nodes: N; excluded: ...`) when it left some out.
   */
  export interface AnswerNoFit {
    tag: 'no-fit',
    val: string,
  }
}
