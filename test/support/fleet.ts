// The balancer suites' instances: service processes on one PostgreSQL database (a new one for the
// file), all stopped and the database dropped after the file's tests (after the balancer: vitest
// runs afterAll hooks last-registered first).
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { startServiceProcess, type ServiceProcess } from './service-process.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

export interface Fleet {
  /** Every instance started so far, in order. */
  services: ServiceProcess[];
  /** Starts an instance on `port`, on the fleet's database, with `env` besides. */
  start(port: number): Promise<ServiceProcess>;
  /** The pets stored in the database. */
  pets(): Promise<Array<{ id: number; name: string }>>;
}

/** Call at a test file's top level. */
export function useFleet(env: Record<string, string>): Fleet {
  let database: TestDatabase | undefined;
  const services: ServiceProcess[] = [];
  beforeAll(async () => {
    database = await createTestDatabase('postgresql');
  });
  afterAll(async () => {
    await Promise.all(services.map((service) => service.stop()));
    await database?.drop();
  });
  return {
    services,
    start: (port) =>
      startServiceProcess({ DATABASE_URL: database!.url, NODE_ENV: 'production', LOG_LEVEL: 'info', ...env, PORT: String(port) }).then(
        (service) => (services.push(service), service),
      ),
    async pets() {
      const client = new pg.Client({ connectionString: database!.migrationUrl });
      await client.connect();
      try {
        const { rows } = await client.query<{ id: string; name: string }>('SELECT id, name FROM pets');
        return rows.map((row) => ({ id: Number(row.id), name: row.name }));
      } finally {
        await client.end();
      }
    },
  };
}

/** How many requests an instance has answered (its request log lines). */
export const answered = (service: ServiceProcess) => service.logs.filter((line) => line.msg === 'request completed').length;
