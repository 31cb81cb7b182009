/// <reference path="./interfaces/wasq-policy-host.d.ts" />
/// <reference path="./interfaces/wasq-policy-preemption.d.ts" />
/// <reference path="./interfaces/wasq-policy-types.d.ts" />
declare module 'wasq:policy/preemption-plugin@1.1.0' {
  export type * as WasqPolicyHost110 from 'wasq:policy/host@1.1.0'; // import wasq:policy/host@1.1.0
  export type * as WasqPolicyTypes110 from 'wasq:policy/types@1.1.0'; // import wasq:policy/types@1.1.0
  export * as preemption from 'wasq:policy/preemption@1.1.0'; // export wasq:policy/preemption@1.1.0
}
