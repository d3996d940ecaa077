// V8 flags the process sets on itself at start (NODE_OPTIONS refuses this one): pretenuring made
// request garbage old-generation under pool waits (docs/benchmarks.md, "Figures behind the code's choices").
import { setFlagsFromString } from 'node:v8';

export const V8_FLAGS = ['--no-allocation-site-pretenuring'] as const;

export function applyV8Settings(): void {
  for (const flag of V8_FLAGS) setFlagsFromString(flag);
}
