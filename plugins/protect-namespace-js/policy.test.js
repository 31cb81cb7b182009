import assert from 'node:assert/strict';
import { test } from 'node:test';

import { kueueAmong } from '../sdk-js/index.js';
import { CatalogBuilder, PreemptionHost, candidate, nodeUsage, workload } from '../sdk-js/testing.js';
import { ProtectNamespace, preemption } from './policy.js';

/** One ClusterQueue with 10 units, full with two workloads of 5; the preemptor needs 5. */
function fullQueue(settings = {}) {
  const b = new CatalogBuilder().flavorResources(1).clusterQueue('cq').quota(0, 0, 10);
  for (const [k, v] of Object.entries(settings)) b.setting(k, v);
  return b.build();
}

const request = {
  preemptor: workload({ id: 9, priority: 100 }),
  requests: [{ fr: 0, amount: 5 }],
  candidates: [
    candidate({ workload: 1, namespace: 'prod', priority: 0, usage: [{ fr: 0, amount: 5 }] }),
    candidate({ workload: 2, namespace: 'dev', priority: 1, usage: [{ fr: 0, amount: 5 }] }),
  ],
  usage: [nodeUsage(0, [[0, 10]])],
};

test('reads the namespaces setting: comma-separated, blanks ignored, prod by default', () => {
  const p = new ProtectNamespace();
  const host = new PreemptionHost(p);
  host.setCatalog(fullQueue());
  assert.deepEqual(p.protected, ['prod']);
  host.setCatalog(fullQueue({ namespaces: ' prod, ,payments ' }));
  assert.deepEqual(p.protected, ['prod', 'payments']);
  host.setCatalog(fullQueue({ namespaces: '' }));
  assert.deepEqual(p.protected, []);
});

test("needs Kueue's needs and who the candidates are", () => {
  const host = new PreemptionHost(preemption);
  assert.deepEqual(host.setCatalog(fullQueue()), { treeUsage: false, localQueueUsage: false, identity: true, podSets: false });
  const fair = new CatalogBuilder().fairSharing().flavorResources(1).clusterQueue('cq').build();
  assert.deepEqual(host.setCatalog(fair), { treeUsage: true, localQueueUsage: false, identity: true, podSets: false });
});

test('a protected victim is spared: Kueue chooses among the others', () => {
  const host = new PreemptionHost(preemption, { keepUsage: true });
  host.setCatalog(fullQueue());
  // Kueue would take the lower-priority candidate 0; it is in `prod`.
  assert.deepEqual(host.selectVictims([request]), [kueueAmong([1])]);
});

test('with every candidate protected, the preemptor waits', () => {
  const host = new PreemptionHost(preemption);
  host.setCatalog(fullQueue({ namespaces: 'prod,dev' }));
  // Kueue among none: the host answers no victims.
  assert.deepEqual(host.selectVictims([request, request]), [kueueAmong([]), kueueAmong([])]);
});
