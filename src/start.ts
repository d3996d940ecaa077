// The process entry (`npm start`, `npm run dev`): stops at once, with a message, on a Node line the
// service is not tested on, before any native module is loaded (better-sqlite3 13 on Node 20 is
// a segmentation fault, not an error); then runs the service (main.ts).
import { supportedNodeRange, unsupportedNodeMessage } from './runtime/supported-node.js';

const problem = unsupportedNodeMessage(process.version, supportedNodeRange(), process.execPath);
if (problem) {
  console.error(problem);
  process.exit(1);
}
await import('./main.js');
