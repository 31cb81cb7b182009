import assert from 'node:assert/strict';
import { test } from 'node:test';

import { placed } from '../sdk-js/index.js';
import { CatalogBuilder, PlacementHost, topology, workload } from '../sdk-js/testing.js';
import { placement } from './policy.js';

// Rack r1 has nodes with 8 and 2 free GPUs, rack r2 one node with 8 (pods in milli-units).
const { domains, leaves } = topology([
  { path: ['r1', 'n1'], free: [110000, 8000] },
  { path: ['r1', 'n2'], free: [110000, 2000] },
  { path: ['r2', 'n3'], free: [110000, 8000] },
]);

/** @param {Partial<import('../sdk-js/testing.js').PlacementRequestSpec>} fields */
const request = (fields) => ({
  workload: workload({ id: 1 }),
  levelNames: ['rack', 'kubernetes.io/hostname'],
  resourceNames: ['pods', 'nvidia.com/gpu'],
  count: 8,
  perPod: [1000, 1000],
  domains,
  leaves,
  ...fields,
});

/**
 * Places one request, and checks the answer as the host would.
 * @param {import('../sdk-js/testing.js').PlacementRequestSpec} spec
 */
function place(spec) {
  const host = new PlacementHost(placement);
  host.setCatalog(new CatalogBuilder().build());
  const answers = host.place([spec]);
  assert.deepEqual(host.check(answers), [undefined]);
  return answers[0];
}

test('an unconstrained gang goes to the emptiest rack that holds it', () => {
  assert.deepEqual(place(request({})), placed([{ leaf: 0, count: 8 }]));
  // Ten pods fit in no rack: across the topology.
  assert.deepEqual(place(request({ count: 10 })), placed([{ leaf: 0, count: 8 }, { leaf: 1, count: 2 }]));
});

test('a required rack: the tightest that holds the pods, else no fit', () => {
  const required = { level: 0, mode: /** @type {const} */ ('required'), sliceLevel: 1, sliceSize: 1 };
  assert.deepEqual(place(request({ count: 9, constraint: required })), placed([{ leaf: 0, count: 8 }, { leaf: 1, count: 1 }]));
  assert.deepEqual(place(request({ count: 8, constraint: required })), placed([{ leaf: 2, count: 8 }]));
  assert.equal(place(request({ count: 11, constraint: required })).tag, 'no-fit');
});

test('slices and a leader are placed as the host requires', () => {
  // Slices of 3 pods within a node: n1 holds 2 (of its 8 GPUs), n2 none, n3 2.
  const sliced = place(request({ count: 6, constraint: { level: 0, mode: 'preferred', sliceLevel: 1, sliceSize: 3 } }));
  assert.deepEqual(sliced, placed([{ leaf: 0, count: 6 }]));
  // A leader needing 2 GPUs goes next to the pods in the same rack.
  const led = place(request({ count: 4, leader: [1000, 2000], constraint: { level: 0, mode: 'required', sliceLevel: 1, sliceSize: 1 } }));
  assert.equal(led.tag, 'placed');
});
