// Dispatch (MultiKueue): Kueue's dispatchers as the Rust SDK and the host have them, the
// request's views, settings, the exported interface and the host's checks.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { allAtOnce, compareNames, DEFAULT_STEP, exportDispatch, incremental, kueue, nominate, Only, parseStep, ROUND_MS, Settings } from '../index.js';
import { checkDispatch, clearLogs, DispatchHost, dispatchRequest, logs } from '../testing.js';

/**
 * A request over clusters `[name, connected]`.
 * @param {Array<[string, boolean]>} clusters
 * @param {Partial<import('../testing.js').DispatchRequestSpec>} [fields]
 */
const request = (clusters, fields = {}) => dispatchRequest({ clusters: clusters.map(([name, connected]) => ({ name, connected })), ...fields });

test("Kueue's dispatchers over the request and over part of it", () => {
  const req = request([['west', true], ['east', true], ['lost', false]]);
  assert.deepEqual(allAtOnce(req), nominate([1, 0]));
  assert.deepEqual(allAtOnce(new Only(req, (c) => c.name === 'west')).nominate, [0]);
  assert.deepEqual(incremental(req, req, 1), { nominate: [0], retryAfter: ROUND_MS });
  assert.equal(req.cluster('east'), 1);
  assert.equal(req.cluster('north'), undefined);
  assert.equal(DEFAULT_STEP, 3);
  assert.equal(ROUND_MS, 300000n);
  assert.equal(kueue.allAtOnce, allAtOnce);
});

test('incremental adds a batch per round in config order and never revokes', () => {
  /** @type {Array<[string, boolean]>} */
  const clusters = [['c', true], ['a', true], ['b', false], ['d', true]];
  const first = request(clusters);
  assert.deepEqual(incremental(first, first, 2), nominate([0, 1], ROUND_MS));
  // Within the round: unchanged, asked again when it ends.
  const within = request(clusters, { now: 60000, nominated: [0, 1], lastNominated: 0 });
  assert.deepEqual(incremental(within, within, 2), nominate([0, 1], ROUND_MS - 60000n));
  // Next round: the one connected cluster left (b is not connected).
  const next = request(clusters, { now: ROUND_MS, nominated: [0, 1], lastNominated: 0 });
  assert.deepEqual(incremental(next, next, 2), nominate([0, 1, 3], ROUND_MS));
  // Only an unconnected one is left: nothing to add, nothing to wait for.
  const done = request(clusters, { now: 2n * ROUND_MS, nominated: [0, 1, 3], lastNominated: ROUND_MS });
  assert.deepEqual(incremental(done, done, 2), nominate([0, 1, 3]));
});

test('incremental with every cluster nominated stops asking', () => {
  const one = request([['a', true]]);
  assert.deepEqual(incremental(one, one), { nominate: [0], retryAfter: undefined });
  // A step of 0 takes one, as Kueue's does.
  const two = request([['a', true], ['b', true]]);
  assert.deepEqual(incremental(two, two, 0), nominate([0], ROUND_MS));
});

test('a round ending past the s64 range saturates as in Rust', () => {
  const req = request([['a', true], ['b', true]], { now: 1n << 62n, nominated: [0], lastNominated: (1n << 63n) - 1n });
  assert.deepEqual(incremental(req, req, 1), nominate([0], (1n << 63n) - 1n - (1n << 62n)));
});

test('names sort by code point, as Rust sorts bytes', () => {
  const req = request([['\uff41', true], ['\u{1f600}', true], ['b', true], ['B', true]]);
  assert.deepEqual(allAtOnce(req).nominate, [3, 2, 0, 1]);
  assert.equal(compareNames('ab', 'a'), 1);
  assert.equal(compareNames('a', 'ab'), -1);
  assert.equal(compareNames('\u{1f600}', '\u{1f600}'), 0);
});

test('the request reads as the host sent it', () => {
  const req = dispatchRequest({
    now: 5,
    workload: { priority: 7, podSets: [{ count: 4, perPod: { 'nvidia.com/gpu': 1000, cpu: 500 } }], labels: { 'wasq.dev/region': 'eu' } },
    clusters: [
      { name: 'eu', labels: { region: 'eu' }, queue: { pending: 2, admitted: 1, resources: [{ flavor: 'gpu', resource: 'nvidia.com/gpu', nominal: 8000, usage: 2000 }] }, copySince: 3 },
      { name: 'us', connected: false, lostSince: 1 },
    ],
    nominated: [0],
    lastNominated: 3,
  });
  const w = req.workload;
  assert.deepEqual([w.namespace, w.name, w.localQueue, w.priority], ['ns', 'w', 'lq', 7]);
  assert.equal(w.label('wasq.dev/region'), 'eu');
  assert.equal(w.label('toString'), undefined);
  assert.deepEqual(w.podSets[0].perPod.map((q) => q.name), ['cpu', 'nvidia.com/gpu']);
  assert.equal(w.totalRequest('nvidia.com/gpu'), 4000n);
  const [eu, us] = req.clusters;
  assert.deepEqual([eu.index, eu.label('region'), eu.connected, eu.copySince], [0, 'eu', true, 3n]);
  assert.equal(eu.queue?.resources[0].usage, 2000n);
  assert.deepEqual([us.connected, us.lostSince, us.queue], [false, 1n, undefined]);
  assert.deepEqual([req.now, req.nominated, req.lastNominated], [5n, [0], 3n]);
});

test('settings are read by key', () => {
  const s = new Settings([{ key: 'dispatcher', value: 'incremental' }, { key: 'stepSize', value: '2' }, { key: 'stepSize', value: '9' }]);
  assert.equal(s.get('stepSize'), '2');
  assert.equal(s.get('missing'), undefined);
  assert.equal(s.all().length, 3);
  assert.deepEqual(new Settings({ k: ' a, ,b ' }).getList('k'), ['a', 'b']);
  assert.deepEqual(new Settings([['k', 'v']]).all(), [{ key: 'k', value: 'v' }]);
});

test("step sizes parse as Rust's u32", () => {
  assert.deepEqual(['1', '+2', '4294967295', '007'].map(parseStep), [1, 2, 4294967295, 7]);
  for (const bad of [undefined, '', '0', '-1', ' 2', '2 ', '2.0', '4294967296', '²', '+', '0x10', '1e3']) {
    assert.equal(parseStep(bad), undefined, String(bad));
  }
});

class Recording {
  /** @type {Settings | undefined} */ seen;

  /** @param {Settings} settings */
  settingsChanged(settings) {
    this.seen = settings;
  }

  /**
   * @param {Settings} settings
   * @param {import('../index.js').DispatchRequest} req
   */
  dispatch(settings, req) {
    assert.equal(settings, this.seen);
    if (settings.get('mode') === 'bad') return /** @type {any} */ ([0]);
    if (settings.get('mode') === 'far') return nominate([req.clusters.length]);
    if (settings.get('mode') === 'twice') return nominate([0, 0]);
    return incremental(req, req, Number(settings.get('step') ?? '1'));
  }
}

test('the exported interface gets its settings, then answers each request', () => {
  const policy = new Recording();
  const host = new DispatchHost(exportDispatch(policy));
  host.setSettings({ step: '2' });
  const answers = host.dispatch([{ clusters: ['a', 'b', 'c'] }, { clusters: [{ name: 'x', connected: false }] }]);
  assert.deepEqual(answers, [nominate([0, 1], ROUND_MS), nominate([])]);
  assert.equal(policy.seen?.get('step'), '2');
  assert.deepEqual(host.check(answers), [undefined, undefined]);
  // Without settings the host still sends an empty list first.
  const fresh = new DispatchHost(new Recording());
  assert.deepEqual(fresh.dispatch([{ clusters: ['a', 'b'] }]), [nominate([0], ROUND_MS)]);
  // Answers may name clusters; retryAfter may be a number.
  const named = new DispatchHost({ dispatch: (/** @type {any} */ _, /** @type {any} */ r) => ({ nominate: [r.clusters[1]], retryAfter: 7 }) });
  assert.deepEqual(named.dispatch([{ clusters: ['a', 'b'] }]), [nominate([1], 7n)]);
});

test('a wrong answer is logged and thrown', () => {
  for (const [mode, error] of [['bad', TypeError], ['far', RangeError], ['twice', RangeError]]) {
    clearLogs();
    const host = new DispatchHost(new Recording());
    host.setSettings({ mode: /** @type {string} */ (mode) });
    assert.throws(() => host.dispatch([{ clusters: ['a'] }]), /** @type {any} */ (error));
    const [level, message] = logs().at(-1) ?? [];
    assert.equal(level, 'error');
    assert.match(/** @type {string} */ (message), /^dispatch failed: /);
  }
  assert.throws(() => exportDispatch(/** @type {any} */ ({})), /must have a method dispatch/);
});

test("the host's checks", () => {
  const req = request([['west', true], ['east', true], ['lost', false]], { nominated: [2], lastNominated: 0 });
  // A lost nominee may stay.
  assert.equal(checkDispatch(req, nominate([1, 0, 2], 5)), undefined);
  const fresh = request([['west', true], ['lost', false]]);
  assert.equal(checkDispatch(fresh, nominate([1])), 'nominates lost, which is not connected');
  assert.equal(checkDispatch(fresh, nominate([0, 0])), 'nominates west twice');
  assert.equal(checkDispatch(fresh, nominate([2])), 'nominates cluster 2, but the request has 2');
  assert.equal(checkDispatch(fresh, nominate([0], 0)), 'asks to be asked again after a time that is not positive');
  const many = dispatchRequest({ clusters: Array.from({ length: 21 }, (_, i) => `c${i}`) });
  assert.equal(checkDispatch(many, allAtOnce(many)), 'nominates 21 clusters, more than 20');
});
