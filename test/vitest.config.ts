// `npm test` runs the behaviour suites (everything built on test/support/test-server.ts) once on
// SQLite and once on PostgreSQL, and the rest (settings, start-up, migrations, several processes,
// database outage) once: those choose their databases themselves. test/global-setup.ts makes the
// run's migrated template databases, and starts PostgreSQL, when the first test asks for them.
// The suites through PgBouncer (test/pgbouncer/, and the behaviour suites once more) need Debian's
// pgbouncer: `npm run test:pgbouncer` (test/vitest.pgbouncer.config.ts), not part of this run; nor
// are the suites behind HAProxy or nginx (test/haproxy/, test/nginx/: `npm run test:haproxy`,
// `npm run test:nginx`), nor the alert rules'
// tests with Debian's promtool (test/prometheus/, `npm run test:alerts`), nor the attack suites,
// which run in a network namespace of their own (`npm run test:attack`, test/vitest.attack.config.ts).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { ATTACK_SUITES } from './vitest.attack.config.js';

/** The suites that specify the contract through test/support/test-server.ts: run on every provider. */
export const BEHAVIOUR_SUITES = [
  'test/rest/**/*.test.ts',
  'test/trpc.test.ts',
  'test/openapi.test.ts',
  'test/security/idempotency.test.ts',
  'test/security/no-data-without-key.test.ts',
  'test/reliability/fuzz.test.ts',
  'test/json-integers.test.ts',
];

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    // Two cores, shared: a few files at a time, and every wait in the tests has its own bound.
    maxWorkers: 2,
    // One worker runs file after file of its project without reloading the modules they share
    // (src/, Prisma's clients, Fastify): loading them again for each file cost a minute
    // of CPU. Each file still starts its own servers and databases and closes them.
    isolate: false,
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The service files first (group 0), the behaviour suites after them (group 1): the run's
    // PostgreSQL template is migrated meanwhile, instead of both workers waiting for it at the start.
    projects: [
      {
        extends: true,
        test: { name: 'sqlite', include: BEHAVIOUR_SUITES, env: { TEST_DATABASE: 'sqlite' }, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: { name: 'postgresql', include: BEHAVIOUR_SUITES, env: { TEST_DATABASE: 'postgresql' }, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: {
          name: 'service',
          include: ['test/**/*.test.ts'],
          exclude: [...BEHAVIOUR_SUITES, ...ATTACK_SUITES, 'test/pgbouncer/**', 'test/haproxy/**', 'test/nginx/**', 'test/prometheus/**'],
        },
      },
    ],
  },
});
