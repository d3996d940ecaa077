// Once per `npm test`: the PostgreSQL server the tests create their databases on. TEST_POSTGRES_URL
// names one to use (CI points it at the machine's server); without it, a private cluster from npm's
// PostgreSQL binaries (test/support/private-postgres.ts) is started here, handed to every test
// file through vitest's provide/inject, and stopped when the run ends.
import type { TestProject } from 'vitest/node';
import { startPrivatePostgres, type PrivatePostgres } from './support/private-postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresServerUrl: string;
  }
}

/**
 * Vitest calls this once for the root and once per project (test/vitest.config.ts), in the same
 * process: the first call starts the cluster, the others share it, the last teardown stops it.
 */
const shared = globalThis as typeof globalThis & { animalStorePostgres?: { cluster: Promise<PrivatePostgres>; users: number } };

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.TEST_POSTGRES_URL;
  if (given) {
    project.provide('postgresServerUrl', given);
    return async () => {};
  }
  const state = (shared.animalStorePostgres ??= { cluster: startPrivatePostgres(), users: 0 });
  state.users += 1;
  project.provide('postgresServerUrl', (await state.cluster).url());
  return async () => {
    state.users -= 1;
    if (state.users === 0) {
      delete shared.animalStorePostgres;
      await (await state.cluster).destroy();
    }
  };
}
