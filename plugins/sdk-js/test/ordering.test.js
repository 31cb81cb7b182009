// Ordering: sort keys, the table of heads (`new-heads`), heads joined with their groups and
// usage, Kueue's head order, and answers.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { exportOrdering, HeadTable, kueue } from '../index.js';
import { CatalogBuilder, clearLogs, head, logs, nodeUsage, OrderingHost, workload } from '../testing.js';

/**
 * A head of the table of heads.
 * @param {number} workload
 * @param {Partial<import('wasq:policy/ordering@1.1.0').HeadInfo>} [fields]
 * @returns {import('wasq:policy/ordering@1.1.0').HeadInfo}
 */
function info(workload, fields = {}) {
  return {
    workload,
    clusterQueue: workload,
    localQueue: undefined,
    priority: 0n,
    created: BigInt(workload),
    queued: BigInt(workload),
    key: { primary: 0n, secondary: BigInt(workload), tertiary: 0n },
    requeueCount: 0,
    requeueReason: undefined,
    identity: undefined,
    ...fields,
  };
}

test('heads are added in id order, restart at first 0, and unknown heads read as the empty head', () => {
  const t = new HeadTable();
  t.add({ first: 0, heads: [info(7), info(8)] });
  t.add({ first: 2, heads: [info(9)] });
  assert.deepEqual([0, 1, 2].map((h) => t.get(h).workload), [7, 8, 9]);
  assert.equal(t.get(3).workload, 0, 'never sent');
  assert.equal(t.get(3).clusterQueue, 0);
  t.add({ first: 0, heads: [info(4)] });
  assert.deepEqual([0, 1].map((h) => t.get(h).workload), [4, 0]);
  t.add({ first: 3, heads: [info(5)] });
  assert.deepEqual([0, 1, 2, 3].map((h) => t.get(h).workload), [4, 0, 0, 5]);
  t.add({ first: 1, heads: [info(6)] });
  assert.equal(t.size, 2);
  assert.deepEqual([0, 1, 2].map((h) => t.get(h).workload), [4, 6, 0]);
});

test('heads are joined with their groups and usage; the answer is their workloads', () => {
  /** @type {unknown[]} */
  const seen = [];
  const plugin = exportOrdering({
    orderHeads(catalog, heads, now, usage) {
      seen.push({
        now,
        heads: heads.map((h) => [h.index, h.workload, h.secondPass, h.borrowingLevel, h.usage.map((u) => u.amount), h.namespace]),
        cohort: usage.usage(0, 0),
      });
      return heads.slice().reverse();
    },
  });
  plugin.setCatalog(new CatalogBuilder().flavorResources(1).cohort('c').clusterQueue('a', 0).build());
  const strings = { first: 0, values: ['team-a'] };
  const identity = { namespace: 0, owner: undefined, labels: [], annotations: [] };
  const order = plugin.orderHeads(
    strings,
    { first: 0, heads: [info(10, { identity }), info(11), info(12)] },
    Uint32Array.of(2, 0, 1, 9),
    [
      { secondPass: true, borrowingLevel: 0, heads: Uint32Array.of(2) },
      { secondPass: false, borrowingLevel: 1, heads: Uint32Array.of(0, 9) },
    ],
    [{ head: 0, usage: [{ fr: 0, amount: 30n }] }],
    [nodeUsage(0, [[0, 7]])],
    5n,
  );
  assert.deepEqual(seen, [
    {
      now: 5n,
      heads: [
        [0, 12, true, 0, [], ''],
        [1, 10, false, 1, [30n], 'team-a'],
        // Head 1 is in no group: a first pass within nominal quota.
        [2, 11, false, 0, [], ''],
        // Head 9 was never sent: the empty head.
        [3, 0, false, 1, [], ''],
      ],
      cohort: 7n,
    },
  ]);
  assert.deepEqual(order, [0, 11, 10, 12]);
  // The next cycle names the heads held; a new catalog starts a new table.
  assert.deepEqual(plugin.orderHeads(undefined, undefined, Uint32Array.of(1, 2), [], undefined, undefined, 6n), [12, 11]);
  plugin.setCatalog(new CatalogBuilder().build());
  assert.deepEqual(plugin.orderHeads(undefined, undefined, Uint32Array.of(1, 2), [], undefined, undefined, 7n), [0, 0]);
});

test("Kueue's head order: second passes, lower borrowing level, higher priority, older; stable", () => {
  const h = (/** @type {Partial<kueue.HeadFacts>} */ f) => ({ secondPass: false, borrowingLevel: 0, priority: 0n, created: 0n, ...f });
  const heads = [
    h({ priority: 1n, created: 5n }),
    h({ borrowingLevel: 1, priority: 9n }),
    h({ priority: 1n, created: 3n }),
    h({ secondPass: true, borrowingLevel: 2 }),
    h({ priority: 2n, created: 9n }),
    h({ priority: 1n, created: 3n }),
  ];
  assert.deepEqual(kueue.orderHeads(heads), [3, 4, 2, 5, 0, 1]);
  // Priority −2^63 negates to itself as an s64, as in Kueue: it sorts as the highest.
  const min = -(2n ** 63n);
  assert.deepEqual(kueue.orderHeads([h({ priority: 5n }), h({ priority: min })]), [1, 0]);
  assert.deepEqual(kueue.orderHeadsByPriority(heads.slice(0, 3), (x) => -x.priority), [2, 0, 1]);
});

test("Kueue's sort keys, and keys checked as the host takes them", () => {
  assert.deepEqual(kueue.sortKey({ priority: 7n, created: 100n }), { primary: -7n, secondary: 100n, tertiary: 0n });
  assert.deepEqual(kueue.sortKey({ priority: -(2n ** 63n), created: 1n }).primary, -(2n ** 63n));
  assert.equal(kueue.compareSortKeys({ primary: 0n, secondary: 1n, tertiary: 0n }, { primary: 0n, secondary: 0n, tertiary: 9n }), 1);
  assert.equal(kueue.compareSortKeys({ primary: 0n, secondary: 0n, tertiary: 0n }, { primary: 0n, secondary: 0n, tertiary: 0n }), 0);

  const host = new OrderingHost({});
  host.setCatalog(new CatalogBuilder().build());
  assert.deepEqual(host.sortKeys([workload({ id: 1, priority: 3, created: 40 })], { now: 9 }), [{ primary: -3n, secondary: 40n, tertiary: 0n }]);
  // A policy's own keys: numbers become BigInt; parts past an s64 are refused.
  const numbers = new OrderingHost({ sortKey: () => ({ primary: 1, secondary: -2, tertiary: 3n }) });
  numbers.setCatalog(new CatalogBuilder().build());
  assert.deepEqual(numbers.sortKeys([workload({ id: 1 })]), [{ primary: 1n, secondary: -2n, tertiary: 3n }]);
  for (const bad of [{ primary: 2n ** 63n, secondary: 0n, tertiary: 0n }, { primary: 0.5, secondary: 0n, tertiary: 0n }, undefined]) {
    const h = new OrderingHost({ sortKey: () => /** @type {any} */ (bad) });
    h.setCatalog(new CatalogBuilder().build());
    clearLogs();
    assert.throws(() => h.sortKeys([workload({ id: 1 })]), /sortKey/);
    assert.match(logs()[0][1], /^sort-keys failed: TypeError: sortKey/);
  }
});

test("admission fair sharing's LocalQueue usage reaches sortKey when needed", () => {
  const catalog = new CatalogBuilder()
    .admissionFairSharing(0, 1000)
    .clusterQueue('cq')
    .queueAdmissionFairSharing(true)
    .localQueue('ns', 'busy', 0)
    .localQueue('ns', 'idle', 0)
    .localQueue('ns', 'weightless', 0, 0)
    .build();
  const usage = [{ localQueue: 0, consumed: new Float64Array(), penalty: new Float64Array(), weighted: 2.5 }];
  const wls = [0, 1, 2].map((lq) => workload({ id: lq + 1, localQueue: lq, priority: 1 }));
  const host = new OrderingHost({ needs: () => ({ localQueueUsage: true }), sortKey: (c, w) => kueue.sortKeyFor(c, w) });
  host.setCatalog(catalog);
  const [busy, idle, weightless] = host.sortKeys(wls, { localQueueUsage: usage });
  assert.equal(busy.primary, kueue.orderBits(2.5));
  assert.deepEqual(idle, { primary: 0n, secondary: -1n, tertiary: 0n });
  assert.equal(weightless.primary, kueue.orderBits(Infinity));
  assert.ok(kueue.compareSortKeys(idle, busy) < 0 && kueue.compareSortKeys(busy, weightless) < 0);
  // Not needed: not sent.
  const plain = new OrderingHost({ sortKey: (c, w) => kueue.sortKeyFor(c, w) });
  plain.setCatalog(catalog);
  assert.equal(plain.sortKeys(wls, { localQueueUsage: usage })[0].primary, 0n);
  assert.equal(kueue.orderBits(-0), 0n);
  assert.equal(kueue.orderBits(NaN), 0n);
  assert.ok(kueue.orderBits(1) < kueue.orderBits(1.5));
});

test('orderHeads answers every head exactly once, by position or as the head', () => {
  for (const [order, message] of /** @type {Array<[unknown, RegExp]>} */ ([
    [[0], /1 of the 2 heads missing/],
    [[0, 0], /head 0 given twice/],
    [[0, 2], /2 is not an index into the 2 heads/],
    [[0, '1'], /1 is not an index/],
    [undefined, /must return the heads' positions/],
  ])) {
    const host = new OrderingHost({ orderHeads: () => /** @type {any} */ (order) });
    host.setCatalog(new CatalogBuilder().build());
    clearLogs();
    assert.throws(() => host.orderHeads([head({ workload: 1 }), head({ workload: 2 })]), message);
    assert.equal(logs()[0][0], 'error');
  }
});

test('the simulated host sends each head once while it waits under one key', () => {
  /** @type {number[]} */
  const sizes = [];
  const host = new OrderingHost({
    orderHeads: (/** @type {any} */ _, /** @type {import('../index.js').Head[]} */ heads) => {
      sizes.push(heads.length);
      return kueue.orderHeads(heads);
    },
  });
  host.setCatalog(new CatalogBuilder().build());
  // What crosses: `first` and how many heads each call adds.
  /** @type {Array<[number, number] | undefined>} */
  const added = [];
  const orderHeads = host.plugin.orderHeads;
  host.plugin.orderHeads = (strings, newHeads, ...rest) => {
    added.push(newHeads && [newHeads.first, newHeads.heads.length]);
    return orderHeads(strings, newHeads, ...rest);
  };
  const a = head({ workload: 1, priority: 1, namespace: 'x' });
  const b = head({ workload: 2, priority: 2, namespace: 'y' });
  assert.deepEqual(host.orderHeads([a, b]), [2, 1]);
  assert.deepEqual(host.orderHeads([a, b, { ...a, workload: 3 }]), [2, 1, 3]);
  // The string table starts again: the heads' table with it.
  host.restartStrings();
  assert.deepEqual(host.orderHeads([b, a]), [2, 1]);
  // A head queued again (a new key) is a new head.
  assert.deepEqual(host.orderHeads([{ ...a, key: { primary: -5n, secondary: 0n, tertiary: 0n }, priority: 5 }, b]), [1, 2]);
  assert.deepEqual(sizes, [2, 3, 2, 2]);
  assert.deepEqual(added, [[0, 2], [2, 1], [0, 2], [2, 1]]);
});
