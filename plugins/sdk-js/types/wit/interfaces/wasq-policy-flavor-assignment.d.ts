/// <reference path="./wasq-policy-types.d.ts" />
declare module 'wasq:policy/flavor-assignment@1.1.0' {
  /**
   * Receives the catalog (see `ordering.set-catalog`).
   */
  export function setCatalog(catalog: Catalog): void;
  /**
   * One answer per request, in order: the index of the chosen entry of `options`, or `none`
   * to assign no flavor (the workload is not admitted this cycle). The host evaluates a
   * workload's podSets one after the other, because the flavor chosen for one changes the
   * quota left for the next; requests of one call never depend on each other. `strings`
   * extends the instance's string table first (see `new-strings`).
   */
  export function chooseFlavors(strings: NewStrings | undefined, requests: Array<Request>): Array<number | undefined>;
  export type Catalog = import('wasq:policy/types@1.1.0').Catalog;
  export type NewStrings = import('wasq:policy/types@1.1.0').NewStrings;
  export type Workload = import('wasq:policy/types@1.1.0').Workload;
  export type FlavorId = import('wasq:policy/types@1.1.0').FlavorId;
  export type ResourceAmount = import('wasq:policy/types@1.1.0').ResourceAmount;
  export type Millis = import('wasq:policy/types@1.1.0').Millis;
  /**
   * How a flavor fits the podSet, worst first (Kueue's granular preemption modes).
   * # Variants
   * 
   * ## `"no-fit"`
   * 
   * Does not fit, even with preemption.
   * ## `"no-preemption-candidates"`
   * 
   * Would fit with preemption, but no candidate is eligible.
   * ## `"preempt"`
   * 
   * Fits after preempting workloads of the same ClusterQueue.
   * ## `"reclaim"`
   * 
   * Fits after reclaiming quota lent to other queues of the cohort.
   * ## `"fit"`
   * 
   * Fits now.
   */
  export type FitMode = 'no-fit' | 'no-preemption-candidates' | 'preempt' | 'reclaim' | 'fit';
  /**
   * One flavor the host evaluated.
   */
  export interface FlavorOption {
    /**
     * The flavor evaluated.
     */
    flavor: FlavorId,
    /**
     * The flavor's worst mode over the group's requested resources.
     */
    mode: FitMode,
    /**
     * How high in the cohort tree it borrows (0 = within nominal quota).
     */
    borrowLevel: number,
  }
  /**
   * One podSet and one resource group to choose a flavor for.
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
     * The group's resources the podSet requests, in total (per-pod × count).
     */
    requests: Array<ResourceAmount>,
    /**
     * Every flavor of the group in the ClusterQueue's order; `none` where the flavor cannot
     * host the podSet at all (taints, node affinity, or the flavor does not exist).
     */
    options: Array<FlavorOption | undefined>,
    /**
     * The scheduler's clock at this decision.
     */
    now: Millis,
  }
}
