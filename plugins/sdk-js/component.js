// Binds the host's `log` import to the SDK's logger. Import it first in a component's build
// entry, and only there: Node cannot load `wasq:policy/host@1.1.0`, so neither a policy nor its
// tests import this module. The build entry `wasq plugin build` writes is:
//
//   import './sdk-js/component.js';
//   export { preemption } from './my-plugin/policy.js';
//
// (see README.md, "Building").

import { log } from 'wasq:policy/host@1.1.0';
import { bindHostLog } from './src/log.js';

bindHostLog(log);
