import assert from 'node:assert/strict';
import { test } from 'node:test';

import { kueueAmong } from '../sdk-js/index.js';
import { CatalogBuilder, PreemptionHost, candidate, nodeUsage, workload } from '../sdk-js/testing.js';
import { preemption } from './policy.js';

test('a victim in a protected namespace is spared', () => {
  // One ClusterQueue with 10 units, full with two workloads of 5; the preemptor needs 5.
  const host = new PreemptionHost(preemption, { keepUsage: true });
  host.setCatalog(new CatalogBuilder().flavorResources(1).clusterQueue('cq').quota(0, 0, 10).build());
  const request = {
    preemptor: workload({ id: 9, priority: 100 }),
    requests: [{ fr: 0, amount: 5 }],
    candidates: [
      candidate({ workload: 1, namespace: 'prod', priority: 0, usage: [{ fr: 0, amount: 5 }] }),
      candidate({ workload: 2, namespace: 'dev', priority: 1, usage: [{ fr: 0, amount: 5 }] }),
    ],
    usage: [nodeUsage(0, [[0, 10]])],
  };
  // Kueue would take the lower-priority candidate 0; it is in `prod`.
  assert.deepEqual(host.selectVictims([request]), [kueueAmong([1])]);
  // Both protected: the host finds no victims among none.
  host.setCatalog(new CatalogBuilder().setting('namespaces', 'prod,dev').flavorResources(1).clusterQueue('cq').quota(0, 0, 10).build());
  assert.deepEqual(host.selectVictims([request]), [kueueAmong([])]);
});
