// kueue-default-dispatch-js: Kueue's MultiKueue dispatchers as a plugin, in JavaScript.
//
// The JavaScript port of `plugins/kueue-default-dispatch`: the same answers as wasq's built-in
// `AllAtOnce` and `Incremental` (`tests/all/languages.rs` compares them on random requests).
//
// Settings (`pluginSettings.kueue-default-dispatch-js`):
// - `dispatcher`: `all-at-once` (the default: every connected cluster, by name) or
//   `incremental` (`stepSize` more connected clusters, in the MultiKueueConfig's order, every
//   five-minute round; earlier nominees are never taken back);
// - `stepSize`: the incremental dispatcher's clusters per round (default 3, Kueue's).
//
// A setting it cannot read is logged and its default kept.

import { allAtOnce, DEFAULT_STEP, exportDispatch, incremental, log, parseStep } from '../sdk-js/index.js';

export class KueueDispatch {
  /** @type {number | undefined} The incremental dispatcher's step; `undefined`: all-at-once. */
  step;

  /** @param {import('../sdk-js/index.js').Settings} settings */
  settingsChanged(settings) {
    const raw = settings.get('stepSize');
    let step = raw === undefined ? DEFAULT_STEP : parseStep(raw);
    if (step === undefined) {
      log.warn(`stepSize "${raw}" is not a positive integer; using ${DEFAULT_STEP}`);
      step = DEFAULT_STEP;
    }
    const dispatcher = settings.get('dispatcher');
    if (dispatcher === undefined || dispatcher === 'all-at-once') {
      this.step = undefined;
    } else if (dispatcher === 'incremental') {
      this.step = step;
    } else {
      log.warn(`dispatcher "${dispatcher}" is neither all-at-once nor incremental; using all-at-once`);
      this.step = undefined;
    }
  }

  /**
   * @param {import('../sdk-js/index.js').Settings} settings
   * @param {import('../sdk-js/index.js').DispatchRequest} request
   */
  dispatch(settings, request) {
    return this.step === undefined ? allAtOnce(request) : incremental(request, request, this.step);
  }
}

export const dispatch = exportDispatch(new KueueDispatch());
