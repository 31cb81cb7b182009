// Logging through the host's `log` import (`wasq:policy/host@1.1.0`).
//
// No module of the SDK imports the host itself: `component.js` (the first import of a
// component's build entry) binds the host's function with `bindHostLog`, so that policies and
// the SDK load unchanged under `node --test`, where lines are kept in memory instead (see
// `testing.js`: `logs()`, `clearLogs()`). The SDK never uses `console`: a component is built
// with stdio disabled.

/** @typedef {import('wasq:policy/types@1.1.0').Level} Level */

/** The levels, least severe first. */
export const LEVELS = /** @type {const} */ (['trace', 'debug', 'info', 'warn', 'error']);

/** How many lines the in-memory sink keeps (the oldest go first). */
const KEPT_LINES = 1000;

/** @type {Array<[Level, string]>} */
const memory = [];

/**
 * Where lines go until the host's function is bound: kept in memory (tests read them).
 * @param {Level} level
 * @param {string} message
 */
function memorySink(level, message) {
  if (memory.length >= KEPT_LINES) memory.shift();
  memory.push([level, message]);
}

/** @type {(level: Level, message: string) => void} */
let sink = memorySink;

/**
 * Sends every line to `hostLog` from now on: the host's `log` import, bound by `component.js`
 * (`undefined`: back to memory).
 * @param {((level: Level, message: string) => void) | undefined} hostLog
 */
export function bindHostLog(hostLog) {
  sink = hostLog ?? memorySink;
}

/**
 * Writes one line to the controller's log (the `tracing` target `wasq::plugin`, tagged with
 * the plugin's name). The host cuts lines at 4 KiB and keeps at most 1,000 lines per call.
 * @param {Level} level
 * @param {unknown} message anything; it is converted with `String()`
 */
export function write(level, message) {
  sink(LEVELS.includes(level) ? level : 'info', String(message));
}

/**
 * The plugin's logger: `log.info('…')`, `log.warn('…')`, … and `log.write(level, '…')`.
 * Lines go to the host's log in a component, and to memory under `node --test`.
 */
export const log = Object.freeze({
  write,
  /** @param {unknown} message */
  trace: (message) => write('trace', message),
  /** @param {unknown} message */
  debug: (message) => write('debug', message),
  /** @param {unknown} message */
  info: (message) => write('info', message),
  /** @param {unknown} message */
  warn: (message) => write('warn', message),
  /** @param {unknown} message */
  error: (message) => write('error', message),
});

/**
 * The lines logged while no host function was bound (tests), oldest first.
 * @returns {Array<[Level, string]>}
 */
export function memoryLines() {
  return memory.slice();
}

/** Forgets the lines kept in memory. */
export function clearMemoryLines() {
  memory.length = 0;
}

/**
 * How an error thrown by a policy (or met by the SDK) is described in the log: its stack when
 * it has one, else its message.
 * @param {unknown} error
 * @returns {string}
 */
export function describeError(error) {
  if (error instanceof Error) {
    const stack = typeof error.stack === 'string' ? error.stack : '';
    const head = `${error.name}: ${error.message}`;
    return stack.includes(error.message) ? stack : stack ? `${head}\n${stack}` : head;
  }
  return String(error);
}
