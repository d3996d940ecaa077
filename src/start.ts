// The process entry (`npm start`, `npm run dev`): stops at once, with a message, on a Node line the
// service is not tested on, before any native module is loaded (better-sqlite3 13 on Node 20 is
// a segmentation fault, not an error); applies the V8 settings the service needs (runtime/v8-settings.ts);
// then runs the service (main.ts).
import { supportedNodeRange, unsupportedNodeMessage } from './runtime/supported-node.js';
import { applyV8Settings } from './runtime/v8-settings.js';

const problem = unsupportedNodeMessage(process.version, supportedNodeRange(), process.execPath);
if (problem) {
  console.error(problem);
  process.exit(1);
}
applyV8Settings();
await import('./main.js');
