// kueue-default-dispatch-js's decisions under node: those of `plugins/kueue-default-dispatch`'s
// own tests.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { nominate, ROUND_MS, Settings } from '../sdk-js/index.js';
import { clearLogs, DispatchHost, logs } from '../sdk-js/testing.js';
import { KueueDispatch } from './policy.js';

/** @param {Record<string, string>} pairs */
function configured(pairs) {
  const p = new KueueDispatch();
  p.settingsChanged(new Settings(pairs));
  return p.step;
}

test('settings choose the dispatcher and its step', () => {
  assert.equal(configured({}), undefined);
  assert.equal(configured({ dispatcher: 'all-at-once', stepSize: '2' }), undefined);
  assert.equal(configured({ dispatcher: 'incremental' }), 3);
  assert.equal(configured({ dispatcher: 'incremental', stepSize: '1' }), 1);
  clearLogs();
  assert.equal(configured({ dispatcher: 'incremental', stepSize: '0' }), 3);
  assert.equal(configured({ dispatcher: 'x' }), undefined);
  assert.deepEqual(logs(), [
    ['warn', 'stepSize "0" is not a positive integer; using 3'],
    ['warn', 'dispatcher "x" is neither all-at-once nor incremental; using all-at-once'],
  ]);
});

test('incremental adds a step per round', () => {
  const host = new DispatchHost(new KueueDispatch());
  host.setSettings({ dispatcher: 'incremental', stepSize: '1' });
  const clusters = ['c', 'a', 'b'];
  assert.deepEqual(host.dispatch([{ clusters }]), [nominate([0], ROUND_MS)]);
  const later = { now: ROUND_MS, clusters, nominated: [0], lastNominated: 0 };
  assert.deepEqual(host.dispatch([later])[0].nominate, [0, 1]);
  assert.deepEqual(new DispatchHost(new KueueDispatch()).dispatch([later])[0].nominate, [1, 2, 0]);
});
