import assert from 'node:assert/strict';
import { test } from 'node:test';

import { kueue } from '../sdk-js/index.js';
import { CatalogBuilder, OrderingHost, head, workload } from '../sdk-js/testing.js';
import { ordering } from './policy.js';

const notebook = { namespace: 'ml', owner: { kind: 'Notebook', apiVersion: 'kubeflow.org/v1', name: 'explore' } };
const job = { namespace: 'ml', owner: { kind: 'Job', apiVersion: 'batch/v1', name: 'train' } };

test('needs who workloads are (and what they request), as the Rust plugin', () => {
  const host = new OrderingHost(ordering);
  assert.deepEqual(host.setCatalog(new CatalogBuilder().build()), { treeUsage: false, localQueueUsage: false, identity: true, podSets: true });
});

test('notebooks queue after batch jobs; bare Workloads are not demoted', () => {
  const host = new OrderingHost(ordering);
  host.setCatalog(new CatalogBuilder().build());
  const [nb, j, bare] = host.sortKeys([
    workload({ id: 1, priority: 100, created: 0, ...notebook }),
    workload({ id: 2, priority: 1, created: 50, ...job }),
    workload({ id: 3, priority: 0, created: 60, namespace: 'ml' }),
  ]);
  assert.deepEqual(nb, { primary: 1n, secondary: -100n, tertiary: 0n });
  assert.deepEqual(j, { primary: 0n, secondary: -1n, tertiary: 50n });
  // Kueue would take the notebook first (priority 100).
  assert.ok(kueue.compareSortKeys(j, nb) < 0);
  assert.ok(kueue.compareSortKeys(bare, nb) < 0);
  assert.ok(kueue.compareSortKeys(j, bare) < 0, "Kueue's order among the others");
});

test('notebook heads are tried after the others; second passes keep their place', () => {
  const host = new OrderingHost(ordering);
  host.setCatalog(new CatalogBuilder().build());
  const heads = [
    head({ workload: 1, clusterQueue: 0, priority: 100, created: 0, ...notebook }),
    head({ workload: 2, clusterQueue: 1, priority: 1, created: 50, ...job }),
  ];
  assert.deepEqual(host.orderHeads(heads), [2, 1]);
  // A notebook on its second pass stays first; within a group, Kueue's order.
  const second = { ...heads[0], secondPass: true };
  const low = head({ workload: 3, clusterQueue: 2, priority: 0, created: 10, ...notebook });
  assert.deepEqual(host.orderHeads([low, heads[1], second]), [1, 2, 3]);
  // Other kinds configured: the notebook keeps Kueue's place.
  host.setCatalog(new CatalogBuilder().setting('kinds', 'RayCluster').build());
  assert.deepEqual(host.orderHeads(heads), [1, 2]);
});
