// Preemption: the table of admitted workloads (`new-rows`), candidates joined with their
// groups and LocalQueue shares, kept quota usage (`usage-kept`), answers, and failures.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { exportPreemption, kueue, kueueAmong, noVictims, RowTable, victims } from '../index.js';
import { CatalogBuilder, clearLogs, logs, nodeUsage, PreemptionHost, candidate, workload } from '../testing.js';

/**
 * A row of the table of admitted workloads.
 * @param {number} workload
 * @param {Partial<import('wasq:policy/preemption@1.1.0').AdmittedRow>} [fields]
 * @returns {import('wasq:policy/preemption@1.1.0').AdmittedRow}
 */
function row(workload, fields = {}) {
  return {
    workload,
    clusterQueue: 0,
    localQueue: undefined,
    priority: BigInt(workload),
    created: 10n,
    admitted: 20n,
    requeueCount: 0,
    requeueReason: undefined,
    usage: [],
    identity: undefined,
    ...fields,
  };
}

/**
 * A request as the host sends it.
 * @param {Partial<import('wasq:policy/preemption@1.1.0').Request>} fields
 * @returns {import('wasq:policy/preemption@1.1.0').Request}
 */
function sent(fields) {
  return {
    preemptor: {
      id: 99,
      identity: undefined,
      clusterQueue: 0,
      localQueue: undefined,
      priority: 5n,
      created: 0n,
      queued: 0n,
      requeueCount: 0,
      requeueReason: undefined,
      podSets: undefined,
    },
    requests: [],
    needsPreemption: new Uint32Array(),
    candidates: new Uint32Array(),
    groups: [],
    localQueueUsage: [],
    usageKept: false,
    usage: [],
    treeUsage: undefined,
    now: 0n,
    ...fields,
  };
}

/**
 * A plugin whose policy records every request it sees (through `look`) and answers no victims.
 * @template T
 * @param {(catalog: import('../index.js').Catalog, request: import('../index.js').PreemptionRequest) => T} look
 */
function recording(look) {
  /** @type {T[]} */
  const seen = [];
  const plugin = exportPreemption({
    selectVictims(catalog, request) {
      seen.push(look(catalog, request));
      return noVictims;
    },
  });
  plugin.setCatalog(new CatalogBuilder().flavorResources(2).cohort('c').clusterQueue('a', 0).clusterQueue('b', 0).localQueue('ns', 'lq0', 1).localQueue('ns', 'lq1', 1).build());
  return { plugin, seen };
}

test('rows are added in id order, restart at first 0, and unknown rows read as the empty row', () => {
  const t = new RowTable();
  t.add({ first: 0, rows: [row(7), row(8)] });
  t.add({ first: 2, rows: [row(9)] });
  assert.deepEqual([0, 1, 2].map((r) => t.get(r).workload), [7, 8, 9]);
  assert.equal(t.get(3).workload, 0, 'never sent');
  assert.deepEqual(t.get(3).usage, []);
  t.add({ first: 0, rows: [row(4)] });
  assert.equal(t.size, 1);
  assert.equal(t.get(1).workload, 0);
  // Past the end: the rows between read as empty; over rows held: replaced.
  t.add({ first: 3, rows: [row(5)] });
  assert.deepEqual([0, 1, 2, 3].map((r) => t.get(r).workload), [4, 0, 0, 5]);
  t.add({ first: 1, rows: [row(6)] });
  assert.equal(t.size, 2);
  assert.deepEqual([0, 1, 2].map((r) => t.get(r).workload), [4, 6, 0]);
});

test('candidates are their rows joined with their groups and LocalQueue shares, across calls', () => {
  const { plugin, seen } = recording((catalog, r) =>
    r.candidates.map((c) => ({
      index: c.index,
      row: c.row,
      workload: c.workload,
      kind: c.kind,
      lca: c.lca,
      evicting: c.evicting,
      share: c.localQueueUsage,
      usage: c.usage.map((u) => [u.fr, u.amount]),
      namespace: c.namespace,
      job: c.jobKind,
      lq: c.localQueueName,
      label: c.label('team'),
    })),
  );
  const strings = { first: 0, values: ['prod', 'Job', 'batch/v1', 'train', 'team', 'a'] };
  plugin.selectVictims(strings, {
    first: 0,
    rows: [
      row(1, { usage: [{ fr: 0, amount: 5n }], localQueue: 0, identity: { namespace: 0, owner: { kind: 1, apiVersion: 2, name: 3 }, labels: [{ key: 4, value: 5 }], annotations: [] } }),
      row(2, { localQueue: 1, clusterQueue: 1 }),
    ],
  }, [
    sent({
      candidates: Uint32Array.of(1, 0),
      groups: [
        { kind: 'fair-sharing', lca: 0, evicting: true, rows: Uint32Array.of(1) },
        { kind: 'same-queue', lca: undefined, evicting: false, rows: Uint32Array.of(0) },
      ],
      localQueueUsage: [{ localQueue: 0, weighted: 0.5 }],
    }),
  ]);
  // The next call names row 0 again, adds row 2 (in no group: it reads as the preemptor's own
  // queue's), and names a row never sent.
  plugin.selectVictims(undefined, { first: 2, rows: [row(3)] }, [sent({ candidates: Uint32Array.of(2, 0, 40), groups: [{ kind: 'reclaim-while-borrowing', lca: 0, evicting: false, rows: Uint32Array.of(0, 40) }] })]);
  assert.deepEqual(seen, [
    [
      { index: 0, row: 1, workload: 2, kind: 'fair-sharing', lca: 0, evicting: true, share: undefined, usage: [], namespace: '', job: undefined, lq: 'lq1', label: undefined },
      { index: 1, row: 0, workload: 1, kind: 'same-queue', lca: undefined, evicting: false, share: 0.5, usage: [[0, 5n]], namespace: 'prod', job: 'Job', lq: 'lq0', label: 'a' },
    ],
    [
      { index: 0, row: 2, workload: 3, kind: 'same-queue', lca: undefined, evicting: false, share: undefined, usage: [], namespace: '', job: undefined, lq: undefined, label: undefined },
      { index: 1, row: 0, workload: 1, kind: 'reclaim-while-borrowing', lca: 0, evicting: false, share: undefined, usage: [[0, 5n]], namespace: 'prod', job: 'Job', lq: 'lq0', label: 'a' },
      { index: 2, row: 40, workload: 0, kind: 'reclaim-while-borrowing', lca: 0, evicting: false, share: undefined, usage: [], namespace: '', job: undefined, lq: undefined, label: undefined },
    ],
  ]);
});

test('a new catalog starts a new table of rows', () => {
  const { plugin, seen } = recording((_, r) => r.candidates.map((c) => c.workload));
  plugin.selectVictims(undefined, { first: 0, rows: [row(1), row(2)] }, [sent({ candidates: Uint32Array.of(0, 1) })]);
  plugin.setCatalog(new CatalogBuilder().build());
  plugin.selectVictims(undefined, undefined, [sent({ candidates: Uint32Array.of(0, 1) })]);
  plugin.selectVictims(undefined, { first: 0, rows: [row(3)] }, [sent({ candidates: Uint32Array.of(0) })]);
  assert.deepEqual(seen, [[1, 2], [0, 0], [3]]);
});

test('kept usage: each entry replaces its node’s usage of the request’s flavor-resources, until the next catalog', () => {
  // Usage of node (a = 1, b = 2, cohort = 0) by flavor-resource 0 and 1, as each request reads it.
  const { plugin, seen } = recording((_, r) => {
    const v = r.quotaView();
    return [0, 1, 2].map((node) => [v.usage(node, 0), v.usage(node, 1)]);
  });
  const both = [{ fr: 0, amount: 1n }, { fr: 1, amount: 1n }];
  plugin.selectVictims(undefined, undefined, [
    sent({ usageKept: true, requests: both, usage: [nodeUsage(1, [[0, 5], [1, 6]]), nodeUsage(0, [[0, 9]])] }),
    // Only fr 0 requested, node 1 lists nothing: its fr 0 is now 0, its fr 1 stays 6.
    sent({ usageKept: true, requests: [{ fr: 0, amount: 1n }], usage: [nodeUsage(1, [])] }),
    // No change sent: what was kept. Unknown nodes and flavor-resources are skipped.
    sent({ usageKept: true, requests: both, usage: [nodeUsage(7, [[0, 1]]), nodeUsage(2, [[9, 1], [1, 4]])] }),
    // A request made by hand reads its own usage only.
    sent({ usageKept: false, requests: both, usage: [nodeUsage(2, [[0, 3]])] }),
  ]);
  plugin.selectVictims(undefined, undefined, [sent({ usageKept: true, requests: both, usage: [] })]);
  plugin.setCatalog(new CatalogBuilder().flavorResources(2).cohort('c').clusterQueue('a', 0).clusterQueue('b', 0).build());
  plugin.selectVictims(undefined, undefined, [sent({ usageKept: true, requests: both, usage: [] })]);
  assert.deepEqual(seen, [
    [[9n, 0n], [5n, 6n], [0n, 0n]],
    // fr 1 is not this request's: a view of it reads 0.
    [[9n, 0n], [0n, 0n], [0n, 0n]],
    [[9n, 0n], [0n, 6n], [0n, 4n]],
    [[0n, 0n], [0n, 0n], [3n, 0n]],
    [[9n, 0n], [0n, 6n], [0n, 4n]],
    [[0n, 0n], [0n, 0n], [0n, 0n]],
  ]);
});

test('a request’s quota view merges kept usage and simulates removing candidates', () => {
  const catalog = new CatalogBuilder().flavorResources(1).cohort('c').clusterQueue('a', 0).quota(1, 0, 10).clusterQueue('b', 0).quota(2, 0, 6, 3, 2).build();
  /** @type {boolean[]} */
  const fits = [];
  const host = new PreemptionHost(
    {
      selectVictims(_, request) {
        const view = request.quotaView();
        const node = /** @type {number} */ (request.preemptorNode);
        fits.push(view.fits(node, request.requests, true));
        const chosen = [];
        for (const c of request.candidates) {
          if (view.fits(node, request.requests, true)) break;
          view.removeCandidate(c);
          chosen.push(c);
        }
        return view.fits(node, request.requests, true) ? victims(chosen, true) : noVictims;
      },
    },
    { keepUsage: true },
  );
  host.setCatalog(catalog);
  // a uses its 10, b its 6, of which 4 are guaranteed: the cohort holds 10 + 2 of its 12.
  const req = {
    preemptor: workload({ id: 9, clusterQueue: 0 }),
    requests: [{ fr: 0, amount: 3 }],
    candidates: [candidate({ workload: 1, usage: [{ fr: 0, amount: 2 }] }), candidate({ workload: 2, usage: [{ fr: 0, amount: 4 }] })],
    usage: [nodeUsage(0, [[0, 12]]), nodeUsage(1, [[0, 10]]), nodeUsage(2, [[0, 6]])],
  };
  assert.deepEqual(host.selectVictims([req]), [victims([0, 1], true)]);
  // The same usage again crosses as no change at all, and reads the same.
  assert.deepEqual(host.selectVictims([req]), [victims([0, 1], true)]);
  assert.deepEqual(fits, [false, false]);
});

test('answers cross in the host’s form; candidates may be given for their indices', () => {
  assert.deepEqual(noVictims, { tag: 'no-victims' });
  assert.deepEqual(victims([2, 0], false), { tag: 'victims', val: { victims: [2, 0], allowBorrowing: false } });
  assert.deepEqual(kueueAmong(Uint32Array.of(1)), { tag: 'kueue-among', val: [1] });
  assert.deepEqual(kueueAmong([{ index: 3 }]), { tag: 'kueue-among', val: [3] });
  assert.deepEqual(kueue.selectVictims({ candidates: ['x', 'y'] }), kueueAmong([0, 1]));
  assert.throws(() => victims([0], /** @type {any} */ (undefined)), /allowBorrowing/);
});

test('an answer the host would refuse is reported and thrown', () => {
  for (const [answer, message] of /** @type {Array<[unknown, RegExp]>} */ ([
    [undefined, /must return noVictims/],
    [{ tag: 'victims', val: { victims: [0, 0], allowBorrowing: true } }, /given twice/],
    [kueueAmong([2]), /2 is not an index into the 2 candidates/],
    [victims([], true), /names no victim/],
    [{ tag: 'victims', val: { victims: [1] } }, /allowBorrowing/],
  ])) {
    clearLogs();
    const plugin = exportPreemption({ selectVictims: () => /** @type {any} */ (answer) });
    plugin.setCatalog(new CatalogBuilder().build());
    assert.throws(() => plugin.selectVictims(undefined, { first: 0, rows: [row(1), row(2)] }, [sent({ candidates: Uint32Array.of(0, 1) })]), message);
    const [line] = logs();
    assert.equal(line[0], 'error');
    assert.match(line[1], /^select-victims failed: /);
    assert.match(line[1], message);
  }
});

test('a policy that throws leaves the tables and the kept usage whole', () => {
  let calls = 0;
  /** @type {Array<[number[], bigint]>} */
  const seen = [];
  const plugin = exportPreemption({
    selectVictims(catalog, request) {
      calls++;
      if (calls === 1) throw new Error('first request fails');
      seen.push([request.candidates.map((c) => c.workload), request.quotaView().usage(0, 0)]);
      return noVictims;
    },
  });
  plugin.setCatalog(new CatalogBuilder().flavorResources(1).clusterQueue('cq').build());
  clearLogs();
  const frs = [{ fr: 0, amount: 1n }];
  assert.throws(
    () =>
      plugin.selectVictims({ first: 0, values: ['prod'] }, { first: 0, rows: [row(1), row(2)] }, [
        sent({ usageKept: true, requests: frs, usage: [nodeUsage(0, [[0, 4]])] }),
        sent({ usageKept: true, requests: frs, usage: [nodeUsage(0, [[0, 7]])] }),
      ]),
    /first request fails/,
  );
  assert.match(logs()[0][1], /select-victims failed: Error: first request fails/);
  // The host sends what the instance holds: the rows and the usage of both requests.
  plugin.selectVictims(undefined, { first: 2, rows: [row(3)] }, [sent({ usageKept: true, requests: frs, candidates: Uint32Array.of(0, 1, 2) })]);
  assert.deepEqual(seen, [[[1, 2, 3], 7n]]);
});

test('needs: the policy’s, made whole; identity and podSets by default', () => {
  const plain = exportPreemption({ selectVictims: () => noVictims });
  assert.deepEqual(plain.setCatalog(new CatalogBuilder().build()), { treeUsage: false, localQueueUsage: false, identity: true, podSets: true });
  const fair = exportPreemption({ needs: (c) => kueue.preemptionNeeds(c), selectVictims: () => noVictims });
  assert.deepEqual(fair.setCatalog(new CatalogBuilder().fairSharing().build()), { treeUsage: true, localQueueUsage: false, identity: false, podSets: false });
  assert.throws(() => exportPreemption(/** @type {any} */ ({})), /must have a method selectVictims/);
  assert.throws(() => exportPreemption(/** @type {any} */ ({ selectVictims() {}, needs: 3 })), /needs of a preemption policy must be a method/);
});

test('the simulated host sends identity, podSets and tree usage only when needed', () => {
  /** @type {unknown[]} */
  const seen = [];
  const policy = {
    /** @type {import('wasq:policy/types@1.1.0').Needs} */
    wants: { identity: true },
    needs() {
      return this.wants;
    },
    selectVictims(/** @type {any} */ _, /** @type {import('../index.js').PreemptionRequest} */ r) {
      seen.push([r.preemptor.namespace, r.preemptor.podSets.length, r.candidates[0].jobName, r.treeUsageView()?.usage(0, 0)]);
      return noVictims;
    },
  };
  const host = new PreemptionHost(policy);
  const req = {
    preemptor: workload({ id: 1, namespace: 'team' }),
    requests: [],
    candidates: [candidate({ workload: 2, owner: { kind: 'Job', apiVersion: 'batch/v1', name: 'train' } })],
    treeUsage: [nodeUsage(0, [[0, 8]])],
  };
  host.setCatalog(new CatalogBuilder().flavorResources(1).clusterQueue('cq').build());
  host.selectVictims([req]);
  policy.wants = { podSets: true, treeUsage: true };
  host.setCatalog(new CatalogBuilder().flavorResources(1).clusterQueue('cq').build());
  host.selectVictims([req]);
  assert.deepEqual(seen, [
    ['team', 0, 'train', undefined],
    ['', 1, undefined, 8n],
  ]);
});
