/// <reference path="../wit/ordering-plugin.d.ts" preserve="true" />
/// <reference path="../wit/preemption-plugin.d.ts" preserve="true" />
/// <reference path="../wit/flavor-assignment-plugin.d.ts" preserve="true" />
/// <reference path="../wit/placement-plugin.d.ts" preserve="true" />
/// <reference path="../wit/dispatch-plugin.d.ts" preserve="true" />
export { Catalog, parseDuration, splitList } from './src/catalog.js';
export { Identified, Workload } from './src/identity.js';
export { LEVELS, log } from './src/log.js';
export { KeptUsage, QuotaView } from './src/quota.js';
export { StringTable } from './src/strings.js';
export { DEFAULT_NEEDS } from './src/export.js';
export { exportOrdering, Head, HeadTable } from './src/ordering.js';
export { Candidate, exportPreemption, kueueAmong, noVictims, Request as PreemptionRequest, RowTable, victims, } from './src/preemption.js';
export { exportFlavorAssignment, Request as FlavorAssignmentRequest } from './src/flavor-assignment.js';
export { exportPlacement, noFit, placed, Request as PlacementRequest, Tree, UNLIMITED_PODS } from './src/placement.js';
export { allAtOnce, Cluster, compareNames, DEFAULT_STEP, exportDispatch, incremental, nominate, Only, parseStep, Request as DispatchRequest, ROUND_MS, Settings, Workload as DispatchWorkload, } from './src/dispatch.js';
export * as kueue from './src/kueue.js';
