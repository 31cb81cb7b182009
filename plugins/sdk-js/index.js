/// <reference path="./types/wit/ordering-plugin.d.ts" preserve="true" />
/// <reference path="./types/wit/preemption-plugin.d.ts" preserve="true" />
/// <reference path="./types/wit/flavor-assignment-plugin.d.ts" preserve="true" />
/// <reference path="./types/wit/placement-plugin.d.ts" preserve="true" />
/// <reference path="./types/wit/dispatch-plugin.d.ts" preserve="true" />
// @wasq/policy: write wasq scheduling policies (`wasq:policy@1.1.0` components) in JavaScript.
//
// A policy is a class; the plugin's entry module (`policy.js`) exports the WIT interface of an
// instance of it:
//
//   import { exportPreemption, kueueAmong } from '../sdk-js/index.js';
//   export class ProtectNamespace { selectVictims(catalog, request) { … } }
//   export const preemption = exportPreemption(new ProtectNamespace());
//
// The SDK keeps the instance-side protocols of the contract (the string table, ordering's table
// of heads, preemption's table of admitted workloads and its kept quota usage) and hands the
// policy plain views. A dispatch policy (MultiKueue) gets its settings once and requests with
// names as strings (`exportDispatch`). See README.md.

export { Catalog, parseDuration, splitList } from './src/catalog.js';
export { Identified, Workload } from './src/identity.js';
export { LEVELS, log } from './src/log.js';
export { KeptUsage, QuotaView } from './src/quota.js';
export { StringTable } from './src/strings.js';
export { DEFAULT_NEEDS } from './src/export.js';

export { exportOrdering, Head, HeadTable } from './src/ordering.js';
export {
  Candidate,
  exportPreemption,
  kueueAmong,
  noVictims,
  Request as PreemptionRequest,
  RowTable,
  victims,
} from './src/preemption.js';
export { exportFlavorAssignment, Request as FlavorAssignmentRequest } from './src/flavor-assignment.js';
export { exportPlacement, noFit, placed, Request as PlacementRequest, Tree, UNLIMITED_PODS } from './src/placement.js';
export {
  allAtOnce,
  Cluster,
  compareNames,
  DEFAULT_STEP,
  exportDispatch,
  incremental,
  nominate,
  Only,
  parseStep,
  Request as DispatchRequest,
  ROUND_MS,
  Settings,
  Workload as DispatchWorkload,
} from './src/dispatch.js';

export * as kueue from './src/kueue.js';
