// The process entry: refuses an untested Node line before any native module loads (better-sqlite3
// on Node 20 segfaults), applies the V8 settings, then runs main.ts.
import { supportedNodeRange, unsupportedNodeMessage } from './runtime/supported-node.js';
import { applyV8Settings } from './runtime/v8-settings.js';

const problem = unsupportedNodeMessage(process.version, supportedNodeRange(), process.execPath);
if (problem) {
  console.error(problem);
  process.exit(1);
}
applyV8Settings();
await import('./main.js');
