/// <reference path="./interfaces/wasq-policy-dispatch.d.ts" />
/// <reference path="./interfaces/wasq-policy-host.d.ts" />
/// <reference path="./interfaces/wasq-policy-types.d.ts" />
declare module 'wasq:policy/dispatch-plugin@1.1.0' {
  export type * as WasqPolicyHost110 from 'wasq:policy/host@1.1.0'; // import wasq:policy/host@1.1.0
  export type * as WasqPolicyTypes110 from 'wasq:policy/types@1.1.0'; // import wasq:policy/types@1.1.0
  export * as dispatch from 'wasq:policy/dispatch@1.1.0'; // export wasq:policy/dispatch@1.1.0
}
