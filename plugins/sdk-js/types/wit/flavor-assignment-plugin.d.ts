/// <reference path="./interfaces/wasq-policy-flavor-assignment.d.ts" />
/// <reference path="./interfaces/wasq-policy-host.d.ts" />
/// <reference path="./interfaces/wasq-policy-types.d.ts" />
declare module 'wasq:policy/flavor-assignment-plugin@1.1.0' {
  export type * as WasqPolicyHost110 from 'wasq:policy/host@1.1.0'; // import wasq:policy/host@1.1.0
  export type * as WasqPolicyTypes110 from 'wasq:policy/types@1.1.0'; // import wasq:policy/types@1.1.0
  export * as flavorAssignment from 'wasq:policy/flavor-assignment@1.1.0'; // export wasq:policy/flavor-assignment@1.1.0
}
