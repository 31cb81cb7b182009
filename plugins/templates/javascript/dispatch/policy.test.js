import assert from 'node:assert/strict';
import { test } from 'node:test';

import { DispatchHost } from '../sdk-js/testing.js';
import { dispatch } from './policy.js';

// Clusters eu-1, us-1 and eu-2, labelled with their region.
const clusters = [
  { name: 'eu-1', labels: { region: 'eu' } },
  { name: 'us-1', labels: { region: 'us' } },
  { name: 'eu-2', labels: { region: 'eu' } },
];

/**
 * Dispatches a workload with these labels, and checks the answer as the host would.
 * @param {Record<string, string>} labels
 */
function nominees(labels) {
  const host = new DispatchHost(dispatch);
  host.setSettings({});
  const answers = host.dispatch([{ clusters, workload: { labels } }]);
  assert.deepEqual(host.check(answers), [undefined]);
  return answers[0].nominate;
}

test("a workload with a region goes to that region's clusters only", () => {
  // No region: every connected cluster, by name.
  assert.deepEqual(nominees({}), [0, 2, 1]);
  assert.deepEqual(nominees({ 'wasq.dev/region': 'eu' }), [0, 2]);
  // A region no cluster serves: Kueue's answer.
  assert.equal(nominees({ 'wasq.dev/region': 'ap' }).length, 3);
});
