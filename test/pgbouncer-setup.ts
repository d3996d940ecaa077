// Once per `npm run test:pgbouncer`: the PostgreSQL server of test/global-setup.ts, and a PgBouncer
// of the run's own in front of it, in transaction pooling with few server connections
// (test/support/private-pgbouncer.ts). Test databases are created on the server and served
// through the pooler (test/support/test-database.ts, TEST_DATABASE=pgbouncer). Without the
// `pgbouncer` program the run stops here, with the message that says how to get it.
import type { TestProject } from 'vitest/node';
import setupDatabases, { runPostgres } from './global-setup.js';
import { startPrivatePgBouncer } from './support/private-pgbouncer.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The port of the run's PgBouncer on 127.0.0.1 (only under test/vitest.pgbouncer.config.ts). */
    pgbouncerPort?: number;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stopPostgres = await setupDatabases(project);
  try {
    const pgbouncer = await startPrivatePgBouncer((await runPostgres()).serverUrl);
    project.provide('pgbouncerPort', pgbouncer.port);
    return async () => {
      await pgbouncer.stop();
      await stopPostgres();
    };
  } catch (error) {
    await stopPostgres();
    throw error;
  }
}
