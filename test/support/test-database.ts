// A fresh, empty database for one test server or process, of the kind this test run is for.
//
// The behaviour suites run once per kind (test/vitest.config.ts, and test/vitest.pgbouncer.config.ts
// for the third): the project sets TEST_DATABASE, which only this harness reads (the service itself
// reads settings in src/config.ts alone).
// - `sqlite`: a file in a temporary directory;
// - `postgresql`: a database of its own, with a random name, dropped afterwards, on the server
//   test/global-setup.ts chose for this run (TEST_POSTGRES_URL, or a private one from npm's binaries);
// - `pgbouncer`: the same, served through the run's PgBouncer in transaction pooling
//   (test/pgbouncer-setup.ts) with `?pgbouncer=true`, migrated on a direct connection, as an
//   operator scaling out runs it (docs/operations.md).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { PROVIDERS, type Provider } from '../../src/db/providers.js';

/** A provider, or PostgreSQL through a transaction pooler. */
export type DatabaseKind = Provider | 'pgbouncer';
const KINDS: readonly DatabaseKind[] = [...PROVIDERS, 'pgbouncer'];

function kindFromEnv(value = 'sqlite'): DatabaseKind {
  if (!(KINDS as readonly string[]).includes(value)) {
    throw new Error(`TEST_DATABASE must be one of ${KINDS.join(', ')}, not "${value}"`);
  }
  return value as DatabaseKind;
}

/** The kind this run's behaviour suites use (`sqlite` unless the vitest project says otherwise). */
const TEST_KIND: DatabaseKind = kindFromEnv(process.env.TEST_DATABASE);

/** The server to create test databases on, from test/global-setup.ts. */
const TEST_POSTGRES_URL = inject('postgresServerUrl');

const HOW_TO_START_POSTGRES =
  'Unset TEST_POSTGRES_URL to have `npm test` start a PostgreSQL of its own, or point it at a running server ' +
  'where this user may CREATE DATABASE.';

export interface TestDatabase {
  provider: Provider;
  /** DATABASE_URL: the file, the database, or the database through PgBouncer (`?pgbouncer=true`). */
  url: string;
  /** Where to migrate it (DATABASE_DIRECT_URL): `url`, except through PgBouncer (a direct connection). */
  migrationUrl: string;
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

/** The URL of database `name` through the run's PgBouncer, marked for the service. */
function pooledDatabaseUrl(name: string): string {
  const port = inject('pgbouncerPort');
  if (port === undefined) {
    throw new Error('TEST_DATABASE=pgbouncer needs the PgBouncer of test/pgbouncer-setup.ts: run it with `npm run test:pgbouncer`.');
  }
  const url = new URL(postgresDatabaseUrl(name));
  url.hostname = '127.0.0.1';
  url.port = String(port);
  url.password = '';
  url.searchParams.set('pgbouncer', 'true');
  return url.href;
}

export async function createTestDatabase(kind: DatabaseKind = TEST_KIND, serverUrl = TEST_POSTGRES_URL): Promise<TestDatabase> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'animal-store-test-'));
    const url = `file:${join(dir, 'animal-store.db')}`;
    return { provider: kind, url, migrationUrl: url, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `animal_store_test_${randomBytes(6).toString('hex')}`;
  await onPostgresServer(`CREATE DATABASE "${name}"`, serverUrl);
  const direct = postgresDatabaseUrl(name, serverUrl);
  return {
    provider: 'postgresql',
    url: kind === 'pgbouncer' ? pooledDatabaseUrl(name) : direct,
    migrationUrl: direct,
    drop: () => onPostgresServer(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`, serverUrl),
  };
}
