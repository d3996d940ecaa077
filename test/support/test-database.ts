// A fresh, empty database for one test server or process, of the provider this test run is for.
//
// The behaviour suites run once per provider (test/vitest.config.ts): the project sets TEST_DATABASE,
// which only this harness reads (the service itself reads settings in src/config.ts alone).
// PostgreSQL runs get a database of their own, with a random name, dropped afterwards, on the server
// test/global-setup.ts chose for this run (TEST_POSTGRES_URL, or a private one from npm's binaries).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { PROVIDERS, type Provider } from '../../src/db/providers.js';

function providerFromEnv(value = 'sqlite'): Provider {
  if (!(PROVIDERS as readonly string[]).includes(value)) {
    throw new Error(`TEST_DATABASE must be one of ${PROVIDERS.join(', ')}, not "${value}"`);
  }
  return value as Provider;
}

/** The provider this run's behaviour suites use (`sqlite` unless the vitest project says otherwise). */
const TEST_PROVIDER: Provider = providerFromEnv(process.env.TEST_DATABASE);

/** The server to create test databases on, from test/global-setup.ts. */
const TEST_POSTGRES_URL = inject('postgresServerUrl');

const HOW_TO_START_POSTGRES =
  'Unset TEST_POSTGRES_URL to have `npm test` start a PostgreSQL of its own, or point it at a running server ' +
  'where this user may CREATE DATABASE.';

export interface TestDatabase {
  provider: Provider;
  url: string;
  /** Deletes the database (PostgreSQL: DROP DATABASE, closing any connection left open). */
  drop(): Promise<void>;
}

/** Runs one statement on the admin database of `serverUrl`, failing loudly when no server answers. */
async function onPostgresServer(sql: string, serverUrl = TEST_POSTGRES_URL): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(`PostgreSQL is not reachable at ${serverUrl} (${(error as Error).message}). ${HOW_TO_START_POSTGRES}`);
  }
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The URL of database `name` on the server `serverUrl` points at. */
function postgresDatabaseUrl(name: string, serverUrl = TEST_POSTGRES_URL): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.href;
}

export async function createTestDatabase(provider: Provider = TEST_PROVIDER, serverUrl = TEST_POSTGRES_URL): Promise<TestDatabase> {
  if (provider === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'animal-store-test-'));
    return { provider, url: `file:${join(dir, 'animal-store.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `animal_store_test_${randomBytes(6).toString('hex')}`;
  await onPostgresServer(`CREATE DATABASE "${name}"`, serverUrl);
  return {
    provider,
    url: postgresDatabaseUrl(name, serverUrl),
    drop: () => onPostgresServer(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`, serverUrl),
  };
}
