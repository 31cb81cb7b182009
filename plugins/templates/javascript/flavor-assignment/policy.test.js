import assert from 'node:assert/strict';
import { test } from 'node:test';

import { CatalogBuilder, FlavorAssignmentHost, workload } from '../sdk-js/testing.js';
import { flavorAssignment } from './policy.js';

/** @param {number} flavor @param {import('wasq:policy/flavor-assignment@1.1.0').FitMode} mode */
const option = (flavor, mode) => ({ flavor, mode, borrowLevel: 0 });

test("the last fitting flavor, else Kueue's choice", () => {
  const host = new FlavorAssignmentHost(flavorAssignment);
  host.setCatalog(new CatalogBuilder().flavorResources(3).clusterQueue('cq').build());
  const answers = host.chooseFlavors([
    { workload: workload({ id: 1 }), options: [option(0, 'fit'), undefined, option(2, 'fit')] },
    { workload: workload({ id: 2 }), options: [option(0, 'no-fit'), option(1, 'preempt')] },
    { workload: workload({ id: 3 }), options: [option(0, 'no-fit'), undefined] },
  ]);
  assert.deepEqual(answers, [2, 1, undefined]);
});
