// A database of its own for one test server or process, of the kind this test run is for: empty
// (createTestDatabase), or already migrated (createMigratedTestDatabase: a copy of the run's
// migrated template, which test/global-setup.ts makes once per run, so a test server costs a file
// copy or a CREATE DATABASE instead of a migration).
//
// The behaviour suites run once per kind (test/vitest.config.ts, and test/vitest.pgbouncer.config.ts
// for the third): the project sets TEST_DATABASE, which only this harness reads (the service itself
// reads settings in src/config.ts alone).
// - `sqlite`: a file in a temporary directory;
// - `postgresql`: a database of its own, with a random name, dropped afterwards, on the server
//   test/global-setup.ts chose for this run (TEST_POSTGRES_URL, or a private one from npm's
//   binaries, started when the run's first test asks for PostgreSQL);
// - `pgbouncer`: the same, served through the run's PgBouncer in transaction pooling
//   (test/pgbouncer-setup.ts) with `?pgbouncer=true`, migrated on a direct connection, as an
//   operator scaling out runs it (docs/operations.md).
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { migrateDatabase } from '../../src/db/database.js';
import { PROVIDERS, type Provider } from '../../src/db/providers.js';
import type { RunPostgres, RunSqlite } from '../global-setup.js';

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

/** Asks test/global-setup.ts for one of the run's databases (made at the first question of the run). */
async function fromRun<T>(what: 'postgresql' | 'sqlite'): Promise<T> {
  const response = await fetch(`${inject('testDatabasesUrl')}/${what}`);
  const body = (await response.json()) as T & { message?: string };
  if (!response.ok) throw new Error(`The run's ${what} database could not be made: ${body.message}`);
  return body;
}
let runPostgres: Promise<RunPostgres> | undefined;
let runSqlite: Promise<RunSqlite> | undefined;

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
async function onPostgresServer(sql: string, serverUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL is not reachable at ${serverUrl} (${(error as Error).message}). Unset TEST_POSTGRES_URL to have ` +
        '`npm test` start a PostgreSQL of its own, or point it at a running server where this user may CREATE DATABASE.',
    );
  }
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The URL of database `name` on the server `serverUrl` points at. */
function postgresDatabaseUrl(name: string, serverUrl: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.href;
}

/** The URL of database `name` through the run's PgBouncer, marked for the service. */
function pooledDatabaseUrl(name: string, serverUrl: string): string {
  const port = inject('pgbouncerPort');
  if (port === undefined) {
    throw new Error('TEST_DATABASE=pgbouncer needs the PgBouncer of test/pgbouncer-setup.ts: run it with `npm run test:pgbouncer`.');
  }
  const url = new URL(postgresDatabaseUrl(name, serverUrl));
  url.hostname = '127.0.0.1';
  url.port = String(port);
  url.password = '';
  url.searchParams.set('pgbouncer', 'true');
  return url.href;
}

/** An empty database: the file does not exist yet; the PostgreSQL database has no tables. */
export async function createTestDatabase(kind: DatabaseKind = TEST_KIND, serverUrl?: string): Promise<TestDatabase> {
  return makeTestDatabase(kind, serverUrl, false);
}

/**
 * A database with every migration applied, as `npm run db:migrate` leaves it: a copy of the run's
 * template (on another PostgreSQL server than the run's, a new database migrated there).
 */
export async function createMigratedTestDatabase(kind: DatabaseKind = TEST_KIND, serverUrl?: string): Promise<TestDatabase> {
  return makeTestDatabase(kind, serverUrl, true);
}

async function makeTestDatabase(kind: DatabaseKind, serverUrl: string | undefined, migrated: boolean): Promise<TestDatabase> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'animal-store-test-'));
    const file = join(dir, 'animal-store.db');
    if (migrated) copyFileSync((await (runSqlite ??= fromRun('sqlite'))).templateFile, file);
    const url = `file:${file}`;
    return { provider: kind, url, migrationUrl: url, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const run = serverUrl === undefined ? await (runPostgres ??= fromRun('postgresql')) : undefined;
  const server = serverUrl ?? run!.serverUrl;
  const template = migrated ? run?.template : undefined;
  const name = `animal_store_test_${randomBytes(6).toString('hex')}`;
  await onPostgresServer(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ''}`, server);
  const direct = postgresDatabaseUrl(name, server);
  // Another server than the run's has no template: migrate there.
  if (migrated && !template) await migrateDatabase(direct);
  return {
    provider: 'postgresql',
    url: kind === 'pgbouncer' ? pooledDatabaseUrl(name, server) : direct,
    migrationUrl: direct,
    drop: () => onPostgresServer(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`, server),
  };
}
