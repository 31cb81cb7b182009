// The string table (`types.new-strings`): ids into a growing table that restarts when
// `first == 0`; unknown ids read as empty strings.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Catalog, StringTable, Workload, exportPreemption, noVictims } from '../index.js';
import { CatalogBuilder } from '../testing.js';

/** The table's strings as a list. */
const all = (/** @type {StringTable} */ t) => Array.from({ length: t.size }, (_, i) => t.get(i));

test('strings are added in id order; first 0 starts a new table', () => {
  const t = new StringTable();
  t.add({ first: 0, values: ['prod', 'Job'] });
  t.add({ first: 2, values: ['batch/v1'] });
  t.add(undefined);
  assert.deepEqual(all(t), ['prod', 'Job', 'batch/v1']);
  t.add({ first: 0, values: ['dev'] });
  assert.deepEqual(all(t), ['dev']);
  assert.equal(t.get(1), '', 'dropped by the restart');
});

test('unknown ids read as empty strings, never as errors', () => {
  const t = new StringTable();
  assert.equal(t.get(0), '');
  t.add({ first: 0, values: ['a'] });
  for (const id of [1, 7, 0xffffffff, -1, 1.5, NaN]) assert.equal(t.get(id), '', `id ${id}`);
});

test('a first past the end leaves the ids between empty; one inside replaces from there', () => {
  const t = new StringTable();
  t.add({ first: 0, values: ['a', 'b'] });
  t.add({ first: 4, values: ['e'] });
  assert.deepEqual(all(t), ['a', 'b', '', '', 'e']);
  t.add({ first: 1, values: ['x'] });
  assert.deepEqual(all(t), ['a', 'x']);
  t.add({ first: 2, values: ['y', 'z'] });
  assert.deepEqual(all(t), ['a', 'x', 'y', 'z']);
});

test('a view keeps the strings of its own call after the table starts again', () => {
  const catalog = Catalog.empty();
  catalog.strings.add({ first: 0, values: ['prod', 'Notebook', 'v1', 'nb'] });
  const wl = new Workload(catalog, {
    id: 1,
    identity: { namespace: 0, owner: { kind: 1, apiVersion: 2, name: 3 }, labels: [], annotations: [] },
    clusterQueue: 0,
    localQueue: undefined,
    priority: 0n,
    created: 0n,
    queued: 0n,
    requeueCount: 0,
    requeueReason: undefined,
    podSets: undefined,
  });
  catalog.strings.add({ first: 0, values: ['dev', 'Job'] });
  assert.equal(catalog.string(0), 'dev');
  assert.equal(wl.namespace, 'prod');
  assert.equal(wl.jobKind, 'Notebook');
  // Appending keeps earlier ids, for old and new views alike.
  catalog.strings.add({ first: 2, values: ['batch/v1'] });
  assert.equal(wl.jobApiVersion, 'v1');
  assert.equal(catalog.string(2), 'batch/v1');
});

test('the table outlives catalogs and is extended before the policy runs', () => {
  /** @type {string[]} */
  const seen = [];
  const plugin = exportPreemption({
    selectVictims(catalog, request) {
      seen.push(`${catalog.generation}:${request.preemptor.namespace}:${catalog.string(1)}`);
      return noVictims;
    },
  });
  const request = (/** @type {number} */ namespace) => ({
    preemptor: {
      id: 1,
      identity: { namespace, owner: undefined, labels: [], annotations: [] },
      clusterQueue: 0,
      localQueue: undefined,
      priority: 0n,
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
  });
  plugin.setCatalog(new CatalogBuilder().build());
  plugin.selectVictims({ first: 0, values: ['prod'] }, undefined, [request(0)]);
  plugin.selectVictims({ first: 1, values: ['dev'] }, undefined, [request(1)]);
  // A new catalog keeps the strings: no strings sent, ids still name them.
  plugin.setCatalog(new CatalogBuilder().generation(2).build());
  plugin.selectVictims(undefined, undefined, [request(0)]);
  plugin.selectVictims({ first: 0, values: ['payments'] }, undefined, [request(0), request(5)]);
  assert.deepEqual(seen, ['1:prod:', '1:dev:dev', '2:prod:dev', '2:payments:', '2::']);
});
