// Placement: the request view (names resolved), the Tree, `fill` under slices, slice layers and
// leaders, answers, and the host's checks (`checkPlacement`).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { exportPlacement, noFit, placed, Tree } from '../index.js';
import { CatalogBuilder, PlacementHost, checkPlacement, topology, workload } from '../testing.js';

const LEVELS = ['cloud.com/block', 'cloud.com/rack', 'kubernetes.io/hostname'];

/**
 * Two blocks of racks of nodes, free pods and GPUs per node (pods in milli-units as the host
 * sends them). b1: r1 {n1: 4 GPUs, n2: 2}, r2 {n3: 4}; b2: r3 {n4: 8, n5: 8 ineligible}.
 */
const NODES = [
  { path: ['b1', 'r1', 'n1'], free: [110000, 4000] },
  { path: ['b1', 'r1', 'n2'], free: [110000, 2000] },
  { path: ['b1', 'r2', 'n3'], free: [110000, 4000] },
  { path: ['b2', 'r3', 'n5'], free: [110000, 8000], eligible: false },
  { path: ['b2', 'r3', 'n4'], free: [110000, 8000] },
];

/**
 * A request over NODES: one GPU per pod.
 * @param {Partial<import('../testing.js').PlacementRequestSpec>} fields
 * @returns {import('../testing.js').PlacementRequestSpec}
 */
function request(fields) {
  const { domains, leaves } = topology(NODES);
  return { workload: workload({ id: 1 }), levelNames: LEVELS, resourceNames: ['pods', 'nvidia.com/gpu'], count: 1, perPod: [1000, 1000], domains, leaves, topology: 'gpus', ...fields };
}

/**
 * The request view the policy would see.
 * @param {import('../testing.js').PlacementRequestSpec} spec
 * @returns {import('../index.js').PlacementRequest}
 */
function view(spec) {
  /** @type {import('../index.js').PlacementRequest | undefined} */
  let seen;
  const host = new PlacementHost({
    place(_, r) {
      seen = r;
      return noFit('looking');
    },
  });
  host.setCatalog(new CatalogBuilder().build());
  host.place([spec]);
  return /** @type {import('../index.js').PlacementRequest} */ (seen);
}

test('the topology builder numbers domains depth first in the order of their values', () => {
  const { domains, leaves, names } = topology(NODES);
  assert.deepEqual(names.map((n) => n.join('/')), ['b1', 'b1/r1', 'b1/r1/n1', 'b1/r1/n2', 'b1/r2', 'b1/r2/n3', 'b2', 'b2/r3', 'b2/r3/n4', 'b2/r3/n5']);
  assert.deepEqual(domains.map((d) => d.parent), [undefined, 0, 1, 1, 0, 4, undefined, 6, 7, 7]);
  assert.deepEqual(domains[0].free, [330000n, 10000n]);
  assert.deepEqual(leaves, [
    { domain: 2, eligible: true },
    { domain: 3, eligible: true },
    { domain: 5, eligible: true },
    { domain: 8, eligible: true },
    { domain: 9, eligible: false },
  ]);
});

test('the request resolves its names; the tree reads domains, leaves and what fits', () => {
  const r = view(request({ leader: [1000, 3000] }));
  assert.equal(r.topology, 'gpus');
  assert.deepEqual(r.levelNames, LEVELS);
  assert.deepEqual(r.resourceNames, ['pods', 'nvidia.com/gpu']);
  assert.deepEqual(r.perPod, [1000n, 1000n]);
  const t = r.tree;
  assert.ok(t instanceof Tree);
  assert.equal(t.levels, 3);
  assert.equal(t.lowest, 2);
  assert.deepEqual(t.atLevel(1), [1, 4, 7]);
  assert.deepEqual(t.children(1), [2, 3]);
  assert.equal(t.ancestorAt(3, 0), 0);
  assert.equal(t.leafOf(5), 2);
  assert.equal(t.column('nvidia.com/gpu'), 1);
  assert.deepEqual(t.fitsOn(1), { pods: 2, limitedBy: 1 });
  assert.equal(t.fitsWithLeader(0), 1);
  assert.equal(t.fitsWithLeader(1), undefined, 'the leader needs 3 GPUs');
  assert.equal(t.podsFitting(0), 10);
  assert.equal(t.podsFitting(6), 8, 'n5 is not eligible');
  // Pods that request nothing fit without limit.
  assert.deepEqual(view(request({ perPod: [0, 0] })).tree.fitsOn(0), { pods: 2147483647, limitedBy: undefined });
});

test('fill places whole slices per slice domain, and refuses what does not fit', () => {
  // Slices of 2 pods within a node: n1 holds 2 slices, n2 one, n3 two.
  const spec = request({ count: 6, constraint: { level: 0, mode: 'required', sliceLevel: 2, sliceSize: 2 } });
  const r = view(spec);
  assert.deepEqual([0, 1, 4].map((d) => r.tree.capacity(d)), [10, 6, 4]);
  const p = r.tree.fill(0);
  assert.deepEqual(p, { pods: [{ leaf: 0, count: 4 }, { leaf: 1, count: 2 }], leader: undefined });
  assert.ok(p);
  assert.equal(checkPlacement(r, placed(p.pods)), undefined);
  assert.equal(r.tree.fill(4), undefined, 'r2 holds 4');
  assert.equal(r.tree.fill(4, 4) !== undefined, true);
  // Slices of 3 within a rack: r1 has 6 pods of room (2 slices), r2 4 (1 slice).
  const racks = view(request({ count: 9, constraint: { level: 0, mode: 'required', sliceLevel: 1, sliceSize: 3 } }));
  assert.deepEqual([1, 4, 0].map((d) => racks.tree.capacity(d)), [6, 3, 9]);
  const q = racks.tree.fill(0);
  assert.ok(q);
  assert.equal(checkPlacement(racks, placed(q.pods)), undefined);
  assert.match(/** @type {string} */ (checkPlacement(racks, placed([{ leaf: 0, count: 4 }, { leaf: 1, count: 1 }, { leaf: 2, count: 4 }]))), /partial slice of 3/);
});

test('fill keeps further slice layers whole', () => {
  // Slices of 4 per block, and within them layers of 2 per node.
  const spec = request({ count: 8, constraint: { level: 0, mode: 'preferred', sliceLevel: 0, sliceSize: 4, layers: [{ level: 2, size: 2 }] } });
  const r = view(spec);
  // n1: 4, n2: 2, n3: 4 (each even) → b1 holds 8 in slices of 4.
  assert.equal(r.tree.capacity(0), 8);
  const p = r.tree.fill(0);
  assert.ok(p);
  assert.equal(checkPlacement(r, placed(p.pods)), undefined);
  // Odd counts per node would split a layer.
  assert.match(/** @type {string} */ (checkPlacement(r, placed([{ leaf: 0, count: 3 }, { leaf: 1, count: 1 }, { leaf: 2, count: 4 }]))), /partial slice of 2/);
});

test('fill places a leader where it fits next to the pods, inside the domains given', () => {
  const r = view(request({ count: 5, leader: [1000, 3000], constraint: { level: 1, mode: 'required', sliceLevel: 2, sliceSize: 1 } }));
  // r1: the leader takes 3 GPUs of n1; 1 + 2 pods fit. r3: n4 has 8: leader + 5.
  assert.equal(r.tree.fill(1), undefined);
  const p = r.tree.fill(7);
  assert.deepEqual(p, { pods: [{ leaf: 3, count: 5 }], leader: 3 });
  assert.equal(checkPlacement(r, placed(p.pods, p.leader)), undefined);
  assert.equal(checkPlacement(r, placed(p.pods)), 'the leader is not placed');
  assert.equal(checkPlacement(r, placed([{ leaf: 3, count: 6 }], 3)), 'leaf 3 cannot hold 6 pods');
  // Several domains, filled in the order given; the leader may go where no pod does (n3: its
  // 4 GPUs leave none for pods).
  const q = view(request({ count: 3, leader: [1000, 4000] })).tree.fill([4, 1]);
  assert.deepEqual(q, { pods: [{ leaf: 0, count: 3 }], leader: 2 });
});

test("the host's checks: counts, leaves, eligibility, required domains", () => {
  const r = view(request({ count: 3, constraint: { level: 1, mode: 'required', sliceLevel: 2, sliceSize: 1 } }));
  assert.equal(checkPlacement(r, noFit('no')), undefined);
  assert.equal(checkPlacement(r, placed([{ leaf: 0, count: 2 }])), '2 of 3 pods placed');
  assert.equal(checkPlacement(r, placed([{ leaf: 0, count: 2 }, { leaf: 0, count: 1 }])), 'leaf 0 given twice');
  assert.equal(checkPlacement(r, placed([{ leaf: 9, count: 3 }])), 'leaf 9 out of range');
  assert.equal(checkPlacement(r, placed([{ leaf: 4, count: 3 }])), 'leaf 4 cannot hold 3 pods');
  assert.equal(checkPlacement(r, placed([{ leaf: 0, count: 2 }, { leaf: 2, count: 1 }])), 'pods span more than one cloud.com/rack domain');
  assert.equal(checkPlacement(r, placed([{ leaf: 0, count: 2 }, { leaf: 1, count: 1 }])), undefined);
  assert.equal(checkPlacement(r, placed([{ leaf: 0, count: 2 }, { leaf: 1, count: 1 }], 2)), 'a leader placed but none requested');
});

test('answers are checked in form; names of the string table are resolved per call', () => {
  const answers = [placed([{ leaf: 0, count: 1 }]), { tag: 'placed', val: { pods: [{ leaf: 0, count: 0 }] } }, { tag: 'placed', val: { pods: [], leader: 7 } }, 'x'];
  const plugin = exportPlacement({ place: () => /** @type {any} */ (answers.shift()) });
  const host = new PlacementHost(plugin);
  host.setCatalog(new CatalogBuilder().build());
  assert.deepEqual(host.place([request({})]), [{ tag: 'placed', val: { pods: [{ leaf: 0, count: 1 }], leader: undefined } }]);
  assert.throws(() => host.place([request({})]), /given 0 pods/);
  assert.throws(() => host.place([request({})]), /7 is not an index into the 5 leaves/);
  assert.throws(() => host.place([request({})]), /must return placed/);
  assert.deepEqual(noFit('too big'), { tag: 'no-fit', val: 'too big' });
});
