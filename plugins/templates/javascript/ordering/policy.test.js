import assert from 'node:assert/strict';
import { test } from 'node:test';

import { kueue } from '../sdk-js/index.js';
import { CatalogBuilder, OrderingHost, head, workload } from '../sdk-js/testing.js';
import { ordering } from './policy.js';

test('higher priority first, then older first', () => {
  const host = new OrderingHost(ordering);
  host.setCatalog(new CatalogBuilder().build());
  const [high, lowOld, lowNew] = host.sortKeys([
    workload({ id: 1, priority: 10, created: 200 }),
    workload({ id: 2, priority: 1, created: 100 }),
    workload({ id: 3, priority: 1, created: 300 }),
  ]);
  assert.ok(kueue.compareSortKeys(high, lowOld) < 0);
  assert.ok(kueue.compareSortKeys(lowOld, lowNew) < 0);
});

test("heads in Kueue's order: second passes first", () => {
  const host = new OrderingHost(ordering);
  host.setCatalog(new CatalogBuilder().build());
  const heads = [head({ workload: 1, priority: 10 }), head({ workload: 2, priority: 1, secondPass: true })];
  assert.deepEqual(host.orderHeads(heads), [2, 1]);
});
