// Logging: lines go to the host's `log` once bound (component builds), to memory otherwise.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { exportPlacement, log } from '../index.js';
import { bindHostLog, describeError } from '../src/log.js';
import { clearLogs, logs } from '../testing.js';

test('lines are kept in memory under node, at their level', () => {
  clearLogs();
  log.info('hello');
  log.warn(42);
  log.write('debug', 'x');
  log.write(/** @type {any} */ ('loud'), 'unknown levels log at info');
  assert.deepEqual(logs(), [
    ['info', 'hello'],
    ['warn', '42'],
    ['debug', 'x'],
    ['info', 'unknown levels log at info'],
  ]);
  clearLogs();
  assert.deepEqual(logs(), []);
});

test('at most the last 1000 lines are kept', () => {
  clearLogs();
  for (let i = 0; i < 1005; i++) log.trace(i);
  assert.equal(logs().length, 1000);
  assert.equal(logs()[0][1], '5');
  clearLogs();
});

test('a policy error is described with its stack and sent to the bound host function', () => {
  /** @type {Array<[string, string]>} */
  const host = [];
  bindHostLog((level, message) => host.push([level, message]));
  try {
    const plugin = exportPlacement({
      place() {
        throw new RangeError('no room');
      },
    });
    assert.throws(() => plugin.place(undefined, [/** @type {any} */ ({ workload: {}, levelNames: [], resourceNames: [], perPod: [], constraint: { layers: [] }, domains: [], leaves: [] })]), /no room/);
  } finally {
    bindHostLog(undefined);
  }
  assert.equal(host.length, 1);
  assert.equal(host[0][0], 'error');
  assert.match(host[0][1], /^place failed: RangeError: no room\n\s+at /);
  assert.equal(describeError('plain'), 'plain');
  assert.equal(describeError(Object.assign(new Error('m'), { stack: undefined })), 'Error: m');
  // Unbound again: lines go to memory.
  clearLogs();
  log.error('after');
  assert.deepEqual(logs(), [['error', 'after']]);
  assert.equal(host.length, 1);
});
