// The catalog's lookups, the catalog builder's derived quotas, and QuotaView's arithmetic
// (the same cases as the Rust SDK's `quota.rs` and `catalog.rs` tests).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Catalog, KeptUsage, parseDuration, QuotaView } from '../index.js';
import { CatalogBuilder, nodeUsage } from '../testing.js';

const FR = 0;
const amt = (/** @type {number} */ amount) => [{ fr: FR, amount: BigInt(amount) }];

/** cohort(0) <- a(1) nominal 10, b(2) nominal 6, borrowing limit 3, lending limit 2 */
const twoQueues = () =>
  new Catalog(new CatalogBuilder().flavorResources(1).cohort('cohort').clusterQueue('a', 0).quota(1, FR, 10).clusterQueue('b', 0).quota(2, FR, 6, 3, 2).build());

test('the builder derives subtree and guaranteed quotas and heights as the host does', () => {
  const cat = twoQueues();
  assert.equal(cat.quota(0, FR).subtree, 12n);
  assert.equal(cat.quota(2, FR).guaranteed, 4n);
  assert.equal(cat.quota(1, FR).guaranteed, 0n);
  assert.deepEqual(cat.nodes.map((n) => n.height), [1, 0, 0]);
  // A flavor-resource a node does not list: all zero, no limits.
  assert.deepEqual(cat.quota(1, 5), { fr: 5, nominal: 0n, borrowingLimit: undefined, lendingLimit: undefined, subtree: 0n, guaranteed: 0n });
});

test('the quota tree: children, ancestors, roots, queues of nodes', () => {
  // root(0) <- mid(1) <- a(2); root <- b(3)
  const cat = new Catalog(new CatalogBuilder().flavorResources(1).cohort('root').cohort('mid', 0).clusterQueue('a', 1).clusterQueue('b', 0).build());
  assert.deepEqual(cat.children(0), [1, 3]);
  assert.deepEqual(cat.children(1), [2]);
  assert.deepEqual(cat.children(2), []);
  assert.deepEqual(cat.ancestors(2), [1, 0]);
  assert.equal(cat.root(2), 0);
  assert.equal(cat.root(0), 0);
  assert.equal(cat.clusterQueueOfNode(2), 0);
  assert.equal(cat.clusterQueueOfNode(3), 1);
  assert.equal(cat.clusterQueueOfNode(1), undefined);
  assert.equal(cat.clusterQueueNode(1), 3);
  assert.equal(cat.clusterQueueId('b'), 1);
  assert.ok(cat.isCohort(1) && !cat.isCohort(2) && !cat.isCohort(99));
  // A malformed catalog with a cycle does not loop forever.
  const cycle = new Catalog({ ...cat.raw, nodes: [{ ...cat.nodes[0], parent: 1 }, { ...cat.nodes[1], parent: 0 }] });
  assert.equal(cycle.ancestors(0).length, 2);
});

test('potential available follows guaranteed quota and borrowing limits', () => {
  // root(0) nominal 5 <- mid(1, borrowing 1) <- cq(2) nominal 2 lending 1
  const cat = new Catalog(
    new CatalogBuilder().flavorResources(1).cohort('root').quota(0, 0, 5).cohort('mid', 0).quota(1, 0, 0, 1).clusterQueue('cq', 1).quota(2, 0, 2, undefined, 1).build(),
  );
  // root: subtree 5 + 1 lent by mid = 6; mid: min(0 + 6, 1 + 1) = 2; cq: 1 + 2.
  assert.equal(cat.potentialAvailable(0, 0), 6n);
  assert.equal(cat.potentialAvailable(1, 0), 2n);
  assert.equal(cat.potentialAvailable(2, 0), 3n);
});

test('settings, setting lists, annotations and durations', () => {
  const cat = new Catalog(
    new CatalogBuilder().setting('namespaces', ' prod, ,payments ').setting('empty', '').flavorResources(1).flavorAnnotation(0, 'wasq.dev/cost', '3').annotationKey('wasq.dev/other').build(),
  );
  assert.equal(cat.setting('namespaces'), ' prod, ,payments ');
  assert.equal(cat.setting('missing'), undefined);
  assert.deepEqual(cat.settingList('namespaces', 'x'), ['prod', 'payments']);
  assert.deepEqual(cat.settingList('missing', 'prod'), ['prod']);
  assert.deepEqual(cat.settingList('empty', 'prod'), []);
  assert.equal(cat.annotation(cat.flavors[0].annotations, 'wasq.dev/cost'), '3');
  assert.equal(cat.annotation(cat.flavors[0].annotations, 'wasq.dev/other'), undefined);
  assert.equal(cat.annotation(cat.flavors[0].annotations, 'unexposed'), undefined);
  assert.equal(cat.flavorResourceId('f0', 'cpu'), 0);
  assert.equal(cat.flavorResourceId('f0', 'memory'), undefined);
  assert.equal(parseDuration('90s'), 90000n);
  assert.equal(parseDuration(' 1h30m '), 5400000n);
  assert.equal(parseDuration('2d500ms'), 172800500n);
  assert.equal(parseDuration('0'), 0n);
  for (const bad of ['', '10', 'm', '1x', '1h 30m', '-1s', '1.5h']) assert.throws(() => parseDuration(bad), RangeError, bad);
});

test('available respects lending and borrowing limits', () => {
  const v = new QuotaView(twoQueues(), [FR]);
  assert.equal(v.available(1, FR), 12n);
  assert.equal(v.available(2, FR), 9n);
  v.addUsage(1, FR, 9n);
  assert.equal(v.usage(0, FR), 9n);
  assert.equal(v.available(2, FR), 4n + 3n);
  assert.equal(v.available(1, FR), 3n);
  assert.equal(v.localAvailable(2, FR), 4n);
});

test('adding usage bubbles only what is above the guaranteed quota', () => {
  const v = new QuotaView(twoQueues(), [FR]);
  v.addUsage(2, FR, 3n);
  assert.deepEqual([v.usage(2, FR), v.usage(0, FR)], [3n, 0n]);
  v.addUsage(2, FR, 3n);
  assert.equal(v.usage(0, FR), 2n);
  v.addUsage(2, FR, -4n);
  assert.deepEqual([v.usage(2, FR), v.usage(0, FR)], [2n, 0n]);
});

test('borrowing, within nominal, fits with and without borrowing', () => {
  const v = new QuotaView(twoQueues(), [FR]);
  v.addUsage(1, FR, 10n);
  assert.ok(!v.borrowing(1, FR));
  assert.ok(v.borrowing(1, FR, 1n));
  assert.ok(v.withinNominal(1, [FR]));
  v.addUsage(1, FR, 1n);
  assert.ok(!v.withinNominal(1, [FR]));
  assert.ok(!v.borrowing(0, FR));
  assert.ok(v.borrowing(0, FR, 2n));

  const w = new QuotaView(twoQueues(), [FR]);
  w.addUsage(2, FR, 6n);
  assert.ok(w.fits(1, amt(10), false));
  assert.ok(!w.fits(1, amt(11), true));
  w.addUsage(2, FR, -6n);
  assert.ok(w.fits(1, amt(12), true));
  assert.ok(!w.fits(1, amt(12), false));
});

test('removing and restoring workloads restores every usage; a clone is a copy', () => {
  const v = new QuotaView(twoQueues(), [FR]);
  v.addWorkload(1, amt(7));
  v.addWorkload(2, amt(5));
  const before = [0, 1, 2].map((n) => v.usage(n, FR));
  const copy = v.clone();
  v.removeWorkload(2, amt(5));
  assert.equal(v.usage(0, FR), 7n);
  assert.equal(copy.usage(0, FR), 8n);
  v.removeCandidate({ clusterQueue: 0, usage: amt(7) });
  v.restoreCandidate({ clusterQueue: 0, usage: amt(7) });
  v.addWorkload(2, amt(5));
  assert.deepEqual([0, 1, 2].map((n) => v.usage(n, FR)), before);
});

test('untracked flavor-resources and unknown nodes are ignored', () => {
  const v = new QuotaView(twoQueues(), [FR]);
  v.addUsage(1, 7, 100n);
  assert.equal(v.usage(1, 7), 0n);
  v.addUsage(99, FR, 5n);
  assert.equal(v.usage(99, FR), 0n);
  assert.equal(v.available(99, FR), 0n);
  v.setUsage(1, 7, 3n);
  assert.equal(v.usage(1, 7), 0n);
});

test('a view of a usage table reads every node listed (a later entry wins), others as 0', () => {
  const cat = twoQueues();
  const v = QuotaView.fromUsageTable(cat, [nodeUsage(2, [[FR, 5], [7, 1]]), nodeUsage(1, [[FR, 3]]), nodeUsage(1, [[FR, 7]]), nodeUsage(99, [[FR, 1]])]);
  const set = new QuotaView(cat, [FR]);
  set.setUsage(2, FR, 5n);
  set.setUsage(1, FR, 7n);
  for (const node of [0, 1, 2]) {
    assert.equal(v.usage(node, FR), set.usage(node, FR), `usage of ${node}`);
    assert.equal(v.available(node, FR), set.available(node, FR), `available of ${node}`);
  }
  assert.equal(v.flavorResources, undefined);
  assert.deepEqual(set.flavorResources, [FR]);
});

test('kept usage replaces per node and requested flavor-resource, and skips what the catalog lacks', () => {
  const cat = new Catalog(new CatalogBuilder().flavorResources(3).cohort('c').clusterQueue('a', 0).build());
  const k = new KeptUsage(cat);
  const all = amt(1).concat([{ fr: 1, amount: 1n }, { fr: 2, amount: 1n }]);
  k.receive([nodeUsage(1, [[0, 5], [1, 6], [2, 7]])], all);
  k.receive([nodeUsage(0, [[0, 9]])], all);
  assert.deepEqual([k.get(1, 0), k.get(1, 1), k.get(1, 2)], [5n, 6n, 7n]);
  k.receive([nodeUsage(1, [[1, 3]])], [{ fr: 0, amount: 1n }, { fr: 1, amount: 1n }]);
  assert.deepEqual([k.get(1, 0), k.get(1, 1), k.get(1, 2)], [0n, 3n, 7n]);
  assert.equal(k.get(0, 0), 9n);
  k.receive([nodeUsage(7, [[0, 1]]), nodeUsage(1, [[9, 1]])], all);
  assert.deepEqual([k.get(7, 0), k.get(1, 9), k.get(-1, 0)], [0n, 0n, 0n]);
});
