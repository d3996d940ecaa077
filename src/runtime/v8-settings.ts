// V8 settings the service applies to itself at start (src/start.ts, before main.ts is loaded), so
// that `npm start`, `node dist/start.js` and a container's command run alike; NODE_OPTIONS does not
// accept this flag. Allocation-site pretenuring moves objects of sites whose objects survived a
// young-generation collection straight into the old generation: requests waiting for the database
// pool made V8 pretenure the short-lived objects of a request, and old-generation collections then
// cost the PostgreSQL lists a quarter more CPU (docs/benchmarks.md, "Figures behind the code's
// choices"). The flag is read at each collection, so setting it at run time takes effect
// (test/v8-settings.test.ts watches V8's own pretenuring trace).
import { setFlagsFromString } from 'node:v8';

export const V8_FLAGS = ['--no-allocation-site-pretenuring'] as const;

export function applyV8Settings(): void {
  for (const flag of V8_FLAGS) setFlagsFromString(flag);
}
