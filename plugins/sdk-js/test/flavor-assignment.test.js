// Flavor assignment: Kueue's choice (fungibility), requests, and answers.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { exportFlavorAssignment, kueue } from '../index.js';
import { CatalogBuilder, FlavorAssignmentHost, clearLogs, logs, workload } from '../testing.js';

/** @typedef {import('wasq:policy/flavor-assignment@1.1.0').FitMode} FitMode */

/**
 * @param {number} flavor
 * @param {FitMode} mode
 * @param {number} [borrowLevel]
 */
const option = (flavor, mode, borrowLevel = 0) => ({ flavor, mode, borrowLevel });

test("Kueue's choice stops at the first flavor the fungibility rules accept", () => {
  const f = kueue.defaultFungibility();
  // whenCanBorrow: may stop search — the first that fits, even borrowing.
  assert.equal(kueue.chooseFlavor([option(0, 'fit', 1), option(1, 'fit', 0)], f), 0);
  // whenCanPreempt: try next flavor — a flavor that needs preemption is passed over.
  assert.equal(kueue.chooseFlavor([option(0, 'preempt'), option(1, 'fit')], f), 1);
  // None accepted: the most preferred seen (borrowing over preemption: fit mode first).
  assert.equal(kueue.chooseFlavor([option(0, 'preempt'), undefined, option(2, 'reclaim')], f), 2);
  assert.equal(kueue.chooseFlavor([option(0, 'no-preemption-candidates'), option(1, 'no-fit')], f), 0);
  assert.equal(kueue.chooseFlavor([undefined, option(1, 'no-fit')], f), undefined);
  // Preemption over borrowing: the lower borrowing level first.
  const p = { ...f, whenCanBorrow: /** @type {const} */ ('try-next-flavor'), preference: /** @type {const} */ ('preemption-over-borrowing') };
  assert.equal(kueue.chooseFlavor([option(0, 'fit', 1), option(1, 'preempt', 0)], p), 1);
  assert.equal(kueue.chooseFlavor([option(0, 'fit', 1), option(1, 'preempt', 0)], f), 0);
  assert.ok(kueue.isPreferred(['preempt', 0], ['no-preemption-candidates', 0], f));
  assert.ok(!kueue.shouldTryNextFlavor(['fit', 0], p));
  assert.ok(kueue.shouldTryNextFlavor(['fit', 1], p));
});

test('requests carry the workload who it is; undefined answers no flavor', () => {
  /** @type {unknown[]} */
  const seen = [];
  const host = new FlavorAssignmentHost({
    chooseFlavor(catalog, r) {
      seen.push([r.workload.namespace, r.workload.podSets.length, r.podSet, r.requests, r.options.length]);
      const fungibility = kueue.fungibilityOf(catalog, r.workload.clusterQueue);
      return r.workload.label('wasq.dev/spot') === 'ok' ? kueue.chooseFlavor(r.options, fungibility) : undefined;
    },
  });
  host.setCatalog(new CatalogBuilder().flavorResources(2).clusterQueue('cq').build());
  const options = [option(0, 'preempt'), option(1, 'fit')];
  assert.deepEqual(
    host.chooseFlavors([
      { workload: workload({ id: 1, namespace: 'a', labels: { 'wasq.dev/spot': 'ok' } }), options, requests: [{ resource: 0, amount: 2000 }] },
      { workload: workload({ id: 2, namespace: 'b' }), podSet: 1, options },
    ]),
    [1, undefined],
  );
  assert.deepEqual(seen, [
    ['a', 1, 0, [{ resource: 0, amount: 2000n }], 2],
    ['b', 1, 1, [], 2],
  ]);
});

test('an option that cannot host the podSet, or out of range, is refused and reported', () => {
  for (const [chosen, message] of /** @type {Array<[unknown, RegExp]>} */ ([
    [1, /option 1 cannot host the podSet/],
    [2, /2 is not an index into the 2 options/],
    ['0', /is not an index/],
  ])) {
    const plugin = exportFlavorAssignment({ chooseFlavor: () => /** @type {any} */ (chosen) });
    const host = new FlavorAssignmentHost(plugin);
    host.setCatalog(new CatalogBuilder().build());
    clearLogs();
    assert.throws(() => host.chooseFlavors([{ workload: workload({ id: 1 }), options: [option(0, 'fit'), undefined] }]), message);
    assert.match(logs()[0][1], /^choose-flavors failed: /);
  }
  assert.throws(() => exportFlavorAssignment(/** @type {any} */ ({})), /must have a method chooseFlavor/);
});
