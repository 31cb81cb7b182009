export type Level = import('wasq:policy/types@1.1.0').Level;
/** @typedef {import('wasq:policy/types@1.1.0').Level} Level */
/** The levels, least severe first. */
export declare const LEVELS: readonly ['trace', 'debug', 'info', 'warn', 'error'];
/**
 * Sends every line to `hostLog` from now on: the host's `log` import, bound by `component.js`
 * (`undefined`: back to memory).
 * @param {((level: Level, message: string) => void) | undefined} hostLog
 */
export declare function bindHostLog(hostLog: ((level: Level, message: string) => void) | undefined): void;
/**
 * Writes one line to the controller's log (the `tracing` target `wasq::plugin`, tagged with
 * the plugin's name). The host cuts lines at 4 KiB and keeps at most 1,000 lines per call.
 * @param {Level} level
 * @param {unknown} message anything; it is converted with `String()`
 */
export declare function write(level: Level, message: unknown): void;
/**
 * The plugin's logger: `log.info('…')`, `log.warn('…')`, … and `log.write(level, '…')`.
 * Lines go to the host's log in a component, and to memory under `node --test`.
 */
export declare const log: Readonly<{
    write: typeof write;
    /** @param {unknown} message */
    trace: (message: unknown) => void;
    /** @param {unknown} message */
    debug: (message: unknown) => void;
    /** @param {unknown} message */
    info: (message: unknown) => void;
    /** @param {unknown} message */
    warn: (message: unknown) => void;
    /** @param {unknown} message */
    error: (message: unknown) => void;
}>;
/**
 * The lines logged while no host function was bound (tests), oldest first.
 * @returns {Array<[Level, string]>}
 */
export declare function memoryLines(): Array<[Level, string]>;
/** Forgets the lines kept in memory. */
export declare function clearMemoryLines(): void;
/**
 * How an error thrown by a policy (or met by the SDK) is described in the log: its stack when
 * it has one, else its message.
 * @param {unknown} error
 * @returns {string}
 */
export declare function describeError(error: unknown): string;
