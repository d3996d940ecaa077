// `npm run test:pgbouncer`: the service through a real PgBouncer in transaction pooling, the way
// operators scale it out (docs/operations.md, PgBouncer). The behaviour suites once more, on
// PostgreSQL through the pooler (TEST_DATABASE=pgbouncer), and test/pgbouncer/ (concurrency, two
// instances, a URL without `pgbouncer=true`, the log lines naming which side went away). Needs Debian's `pgbouncer` (`bash .ci/run` installs
// it); fails at once without it. test/pgbouncer-setup.ts starts it, and PostgreSQL as `npm test` does.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { BEHAVIOUR_SUITES } from './vitest.config.js';

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    maxWorkers: 2,
    globalSetup: ['test/pgbouncer-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    name: 'pgbouncer',
    include: [...BEHAVIOUR_SUITES, 'test/pgbouncer/**/*.test.ts'],
    env: { TEST_DATABASE: 'pgbouncer' },
  },
});
