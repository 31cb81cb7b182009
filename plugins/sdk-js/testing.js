/// <reference path="./types/wit/ordering-plugin.d.ts" preserve="true" />
/// <reference path="./types/wit/preemption-plugin.d.ts" preserve="true" />
/// <reference path="./types/wit/flavor-assignment-plugin.d.ts" preserve="true" />
/// <reference path="./types/wit/placement-plugin.d.ts" preserve="true" />
/// <reference path="./types/wit/dispatch-plugin.d.ts" preserve="true" />
// @wasq/policy/testing: run a policy under `node --test`, without building a component.
//
//   import { CatalogBuilder, PreemptionHost, candidate, workload } from '../sdk-js/testing.js';
//   const host = new PreemptionHost(preemption);          // the plugin's exported interface
//   host.setCatalog(new CatalogBuilder().flavorResources(1).clusterQueue('cq').quota(0, 0, 10).build());
//   const [answer] = host.selectVictims([{ preemptor: workload({ id: 9 }), requests: [{ fr: 0, amount: 5 }], … }]);
//
// See README.md, "Testing".

export {
  amounts,
  candidate,
  CatalogBuilder,
  checkDispatch,
  checkPlacement,
  clearLogs,
  DispatchHost,
  dispatchRequest,
  FlavorAssignmentHost,
  head,
  logs,
  MAX_NOMINEES,
  nodeUsage,
  OrderingHost,
  PlacementHost,
  PreemptionHost,
  rawDispatchRequest,
  topology,
  workload,
} from './src/testing.js';

/** @typedef {import('./src/testing.js').Who} Who */
/** @typedef {import('./src/testing.js').WorkloadSpec} WorkloadSpec */
/** @typedef {import('./src/testing.js').HeadSpec} HeadSpec */
/** @typedef {import('./src/testing.js').CandidateSpec} CandidateSpec */
/** @typedef {import('./src/testing.js').TopologyNode} TopologyNode */
/** @typedef {import('./src/testing.js').PreemptionRequestSpec} PreemptionRequestSpec */
/** @typedef {import('./src/testing.js').FlavorRequestSpec} FlavorRequestSpec */
/** @typedef {import('./src/testing.js').PlacementRequestSpec} PlacementRequestSpec */
/** @typedef {import('./src/testing.js').ClusterSpec} ClusterSpec */
/** @typedef {import('./src/testing.js').DispatchRequestSpec} DispatchRequestSpec */
