// `npm run test:haproxy`: the service behind a real HAProxy (Debian's `haproxy`) configured as
// docs/operations.md gives it, three instances as real processes, under steady load: a rolling
// deploy (test/haproxy/rolling-deploy.test.ts) and a database outage
// (test/haproxy/database-outage.test.ts); and client addresses through it
// (test/haproxy/client-addresses.test.ts). Needs the `haproxy` program
// (`bash .ci/run` installs it); fails at once without it (test/support/private-haproxy.ts). The
// PostgreSQL server of test/global-setup.ts, as `npm test` has it; the outage test starts its own.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    // One file at a time: each runs three instances and a load on two shared cores.
    maxWorkers: 1,
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 60_000,
    name: 'haproxy',
    include: ['test/haproxy/**/*.test.ts'],
  },
});
