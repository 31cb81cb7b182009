// The SDK inside a real component: builds the three JavaScript plugins and a failing fixture
// with componentize-js (tools/build.mjs), runs them through jco's JS host (`jco transpile`,
// the host's `log` import recorded), and drives them with the simulated hosts.
//
// Slow (a build takes 10–40 s), so it runs only when the toolchain is named:
//   COMPONENTIZE_JS=…/componentize-js JCO=…/jco node --test test/component.test.js

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { kueueAmong, nominate, noVictims, ROUND_MS } from '../index.js';
import { CatalogBuilder, DispatchHost, OrderingHost, PreemptionHost, candidate, head, nodeUsage, workload } from '../testing.js';
import { build } from '../tools/build.mjs';

const { COMPONENTIZE_JS, JCO } = process.env;
const skip = !COMPONENTIZE_JS || !JCO ? 'set COMPONENTIZE_JS and JCO to build components' : false;
const plugins = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** @type {string} */
let work;

before(async () => {
  if (!skip) work = await mkdtemp(join(tmpdir(), 'wasq-js-component-'));
});
after(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

/**
 * Builds a plugin directory and loads the component in Node through jco, the host's `log`
 * recorded in the returned `lines`.
 * @param {string} dir
 * @param {string} name
 */
async function load(dir, name) {
  const wasm = join(work, `${name}.wasm`);
  await build({ pluginDir: dir, out: wasm });
  const out = join(work, name);
  await mkdir(out, { recursive: true });
  await writeFile(join(out, 'host.js'), 'export const lines = [];\nexport function log(level, message) { lines.push([level, message]); }\n');
  const run = spawnSync(JCO ?? 'jco', ['transpile', wasm, '-o', out, '--name', 'plugin', '--map', 'wasq:policy/host@1.1.0=./host.js', '-q'], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  const component = await import(pathToFileURL(join(out, 'plugin.js')).href);
  const host = await import(pathToFileURL(join(out, 'host.js')).href);
  return { component, lines: /** @type {Array<[string, string]>} */ (host.lines) };
}

test('protect-namespace-js decides in a component as under node', { skip }, async () => {
  const { component } = await load(join(plugins, 'protect-namespace-js'), 'protect-namespace-js');
  const host = new PreemptionHost(component.preemption, { keepUsage: true });
  assert.deepEqual(host.setCatalog(new CatalogBuilder().flavorResources(1).clusterQueue('cq').quota(0, 0, 10).build()), {
    treeUsage: false,
    localQueueUsage: false,
    identity: true,
    podSets: false,
  });
  const request = {
    preemptor: workload({ id: 9, priority: 100 }),
    requests: [{ fr: 0, amount: 5 }],
    candidates: [
      candidate({ workload: 1, namespace: 'prod', usage: [{ fr: 0, amount: 5 }] }),
      candidate({ workload: 2, namespace: 'dev', priority: 1, usage: [{ fr: 0, amount: 5 }] }),
    ],
    usage: [nodeUsage(0, [[0, 10]])],
  };
  const answers = host.selectVictims([request, request]).map((a) => ({ ...a, val: Array.from(/** @type {any} */ (a).val) }));
  assert.deepEqual(answers, [kueueAmong([1]), kueueAmong([1])]);
});

test('demote-notebooks-js decides in a component as under node', { skip }, async () => {
  const { component } = await load(join(plugins, 'demote-notebooks-js'), 'demote-notebooks-js');
  const host = new OrderingHost(component.ordering);
  host.setCatalog(new CatalogBuilder().build());
  const notebook = { namespace: 'ml', owner: { kind: 'Notebook', apiVersion: 'kubeflow.org/v1', name: 'nb' } };
  const keys = host.sortKeys([workload({ id: 1, priority: 100, ...notebook }), workload({ id: 2, priority: 1, created: 50 })]);
  assert.deepEqual(keys, [
    { primary: 1n, secondary: -100n, tertiary: 0n },
    { primary: 0n, secondary: -1n, tertiary: 50n },
  ]);
  const order = host.orderHeads([head({ workload: 1, priority: 100, ...notebook }), head({ workload: 2, clusterQueue: 1, priority: 1 })]);
  assert.deepEqual(Array.from(order), [2, 1]);
});

test('kueue-default-dispatch-js decides in a component as under node', { skip }, async () => {
  const { component, lines } = await load(join(plugins, 'kueue-default-dispatch-js'), 'kueue-default-dispatch-js');
  const host = new DispatchHost(component.dispatch);
  host.setSettings({ dispatcher: 'incremental', stepSize: '1' });
  const clusters = [{ name: 'c', labels: { region: 'eu' } }, 'a', { name: 'b', connected: false, lostSince: 5 }, 'd'];
  const answers = host.dispatch([
    { clusters },
    { now: ROUND_MS - 1n, clusters, nominated: [0], lastNominated: 0 },
    { now: ROUND_MS, clusters, nominated: [0], lastNominated: 0, workload: { podSets: [{ count: 2, perPod: { cpu: 500 } }] } },
  ]);
  const plain = answers.map((a) => ({ nominate: Array.from(a.nominate), retryAfter: a.retryAfter }));
  assert.deepEqual(plain, [nominate([0], ROUND_MS), nominate([0], 1n), nominate([0, 1], ROUND_MS)]);
  assert.deepEqual(host.check(answers), [undefined, undefined, undefined]);
  // Kueue's all-at-once by default; a setting it cannot read is logged through the host.
  const other = new DispatchHost(component.dispatch);
  other.setSettings({ dispatcher: 'x' });
  assert.deepEqual(Array.from(other.dispatch([{ clusters }])[0].nominate), [1, 0, 3]);
  assert.deepEqual(lines, [['warn', 'dispatcher "x" is neither all-at-once nor incremental; using all-at-once']]);
});

test('a policy error is logged through the host import before the component traps', { skip }, async () => {
  const dir = join(work, 'failing');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'failing', type: 'module', wasq: { kind: 'preemption' } }));
  await writeFile(
    join(dir, 'policy.js'),
    `import { exportPreemption, log, noVictims } from '../sdk-js/index.js';
export const preemption = exportPreemption({
  selectVictims(catalog, request) {
    log.info('candidates: ' + request.candidates.length);
    if (request.candidates.length > 1) throw new RangeError('too many candidates');
    return noVictims;
  },
});
`,
  );
  const { component, lines } = await load(dir, 'failing');
  const host = new PreemptionHost(component.preemption);
  host.setCatalog(new CatalogBuilder().build());
  const one = { preemptor: workload({ id: 9 }), requests: [], candidates: [candidate({ workload: 1 })] };
  assert.deepEqual(host.selectVictims([one]), [noVictims]);
  const two = { ...one, candidates: [candidate({ workload: 1 }), candidate({ workload: 2 })] };
  assert.throws(() => host.selectVictims([two]));
  assert.deepEqual(lines.slice(0, 2), [
    ['info', 'candidates: 1'],
    ['info', 'candidates: 2'],
  ]);
  assert.equal(lines[2][0], 'error');
  assert.match(lines[2][1], /^select-victims failed: RangeError: too many candidates/);
});
