// The testing module: builders, and simulated hosts that speak the protocols as wasq does.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { noVictims } from '../index.js';
import { amounts, candidate, CatalogBuilder, head, nodeUsage, OrderingHost, PreemptionHost, workload } from '../testing.js';

test('the catalog builder: ids in order, Kueue defaults, derived quotas through lending limits', () => {
  // root(0) <- mid(1, lends 2 of 5) <- cq(2) 5 of fr 0, 3 of fr 1; root <- other(3)
  const raw = new CatalogBuilder()
    .resourceFlavors(['cpu', 'memory'], 'on-demand')
    .setting('k', 'v')
    .cohort('root')
    .cohort('mid', 0)
    .quota(1, 0, 0, undefined, 2)
    .clusterQueue('cq', 1)
    .quota(2, 0, 5)
    .quota(2, 1, 3, 1)
    .preemption({ withinClusterQueue: 'lower-priority' })
    .resourceGroup([0, 1], [0])
    .clusterQueue('other', 0)
    .fairWeight(3, 500)
    .localQueue('team', 'main', 0)
    .build();
  assert.equal(raw.generation, 1n);
  assert.deepEqual(raw.resources, ['cpu', 'memory']);
  assert.deepEqual(raw.flavorResources, [{ flavor: 0, resource: 0 }, { flavor: 0, resource: 1 }]);
  assert.equal(raw.flavors[0].name, 'on-demand');
  assert.deepEqual(raw.clusterQueues.map((c) => [c.name, c.node]), [['cq', 2], ['other', 3]]);
  assert.equal(raw.clusterQueues[0].preemption.withinClusterQueue, 'lower-priority');
  assert.equal(raw.clusterQueues[0].preemption.reclaimWithinCohort, 'never');
  assert.equal(raw.clusterQueues[1].fungibility.whenCanPreempt, 'try-next-flavor');
  assert.deepEqual(Array.from(raw.clusterQueues[0].resourceGroups[0].covered), [0, 1]);
  assert.deepEqual(raw.nodes.map((n) => n.height), [2, 1, 0, 0]);
  assert.equal(raw.nodes[3].fairWeight, 500n);
  const q = (/** @type {number} */ node, /** @type {number} */ fr) => raw.nodes[node].quotas.find((x) => x.fr === fr);
  // mid: subtree 5 (cq's), lends 2, so 3 are guaranteed; root gets 2 of fr 0 and 3 of fr 1.
  assert.deepEqual([q(1, 0)?.subtree, q(1, 0)?.guaranteed, q(0, 0)?.subtree, q(0, 1)?.subtree], [5n, 3n, 2n, 3n]);
  assert.equal(q(2, 1)?.borrowingLimit, 1n);
  assert.equal(q(3, 0), undefined, 'no quota, none listed');
  assert.deepEqual(raw.localQueues, [{ namespace: 'team', name: 'main', clusterQueue: 0, fairWeight: 1000n }]);
  assert.deepEqual(amounts([[1, 5]]), [{ fr: 1, amount: 5n }]);
});

test('strings cross once each, in id order, and again after a restart', () => {
  /** @type {unknown[]} */
  const sent = [];
  const host = new OrderingHost({});
  host.setCatalog(new CatalogBuilder().build());
  const sortKeys = host.plugin.sortKeys;
  host.plugin.sortKeys = (strings, ...rest) => {
    sent.push(strings);
    return sortKeys(strings, ...rest);
  };
  host.sortKeys([workload({ id: 1, namespace: 'a', labels: { k: 'a' } })]);
  host.sortKeys([workload({ id: 2, namespace: 'a' })]);
  host.sortKeys([workload({ id: 3, namespace: 'b', owner: { kind: 'Job', apiVersion: 'batch/v1', name: 'j' } })]);
  host.restartStrings();
  host.sortKeys([workload({ id: 4, namespace: 'b' })]);
  assert.deepEqual(sent, [
    { first: 0, values: ['a', 'k'] },
    undefined,
    { first: 2, values: ['b', 'Job', 'batch/v1', 'j'] },
    { first: 0, values: ['b'] },
  ]);
});

test('with keepUsage, a request carries only the nodes whose usage changed, and rows cross once', () => {
  /** @type {unknown[]} */
  const sent = [];
  const host = new PreemptionHost({ selectVictims: () => noVictims }, { keepUsage: true });
  host.setCatalog(new CatalogBuilder().flavorResources(2).cohort('c').clusterQueue('a', 0).clusterQueue('b', 0).build());
  const select = host.plugin.selectVictims;
  host.plugin.selectVictims = (strings, rows, requests) => {
    sent.push([rows && [rows.first, rows.rows.map((r) => r.workload)], requests.map((r) => [r.usageKept, r.usage.map((u) => u.node)])]);
    return select(strings, rows, requests);
  };
  const req = (/** @type {number} */ a, /** @type {number[]} */ frs = [0]) => ({
    preemptor: workload({ id: 9, clusterQueue: 0 }),
    requests: frs.map((fr) => ({ fr, amount: 1 })),
    candidates: [candidate({ workload: 1, admitted: 5 }), candidate({ workload: 2 })],
    usage: [nodeUsage(0, [[0, 4]]), nodeUsage(1, [[0, a]]), nodeUsage(2, [])],
  });
  host.selectVictims([req(3), req(3)]);
  host.selectVictims([req(4)]);
  // Another flavor-resource: only a node whose usage of it is not what the instance holds (0).
  host.selectVictims([{ ...req(4, [0, 1]), usage: [nodeUsage(0, [[0, 4]]), nodeUsage(1, [[0, 4], [1, 2]]), nodeUsage(2, [])] }]);
  host.selectVictims([{ ...req(4), candidates: [candidate({ workload: 1, admitted: 6 })] }]);
  assert.deepEqual(sent, [
    [[0, [1, 2]], [[true, [0, 1, 2]], [true, []]]],
    [undefined, [[true, [1]]]],
    [undefined, [[true, [1]]]],
    // Admitted again: a new row.
    [[2, [1]], [[true, []]]],
  ]);
});

test('workload, head and candidate builders fill what a test leaves out', () => {
  assert.deepEqual(workload({ id: 1 }), { id: 1, clusterQueue: 0, priority: 0n, created: 0n, requeueCount: 0, podSets: [{ count: 1, perPod: [] }] });
  assert.equal(head({ workload: 2, secondPass: true }).secondPass, true);
  assert.equal(head({ workload: 2 }).borrowingLevel, 0);
  assert.equal(candidate({ workload: 3 }).kind, 'same-queue');
});
