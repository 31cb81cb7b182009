/// <reference path="./wasq-policy-types.d.ts" />
declare module 'wasq:policy/host@1.1.0' {
  /**
   * Writes a line to the controller's log (the `tracing` target `wasq::plugin`), tagged
   * with the plugin's name and digest. Lines longer than 4 KiB are cut; a plugin that logs
   * more than 1,000 lines in one call has the rest dropped.
   */
  export function log(level: Level, message: string): void;
  export type Level = import('wasq:policy/types@1.1.0').Level;
}
