// Once per test run: the databases the tests copy theirs from, made on first demand and shared by
// every test file. Test files ask for them through test/support/test-database.ts, which calls a
// small HTTP endpoint of this process (handed to them with vitest's provide/inject):
// - PostgreSQL: the server named by TEST_POSTGRES_URL (CI points it at the machine's server) or,
//   without it, a private cluster from npm's PostgreSQL binaries (test/support/private-postgres.ts),
//   started when the first test asks for PostgreSQL, so a run of SQLite-only files never starts
//   one. On it, one migrated template database; each test database is a copy of it
//   (CREATE DATABASE … TEMPLATE), a database of its own.
// - SQLite: one migrated file; each test database is a copy of it.
// Both are migrated with migrateDatabase, as `npm start` migrates, and deleted when the run ends.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startPrivatePostgres, type PrivatePostgres } from './support/private-postgres.js';

/** The run's PostgreSQL server, and its migrated template database. */
export interface RunPostgres {
  /** The admin database's URL: where tests CREATE and DROP theirs. */
  serverUrl: string;
  /** The name of the migrated database that test databases are copied from. */
  template: string;
}

/** The run's migrated SQLite file, that test databases are copied from. */
export interface RunSqlite {
  templateFile: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The endpoint of this process that hands out RunPostgres and RunSqlite (test/support/test-database.ts). */
    testDatabasesUrl: string;
  }
}

interface RunDatabases {
  postgres(): Promise<RunPostgres>;
  sqlite(): Promise<RunSqlite>;
  endpoint: Server;
  users: number;
  close(): Promise<void>;
}

/**
 * Vitest calls the setup once per project with tests to run and once for the root, in this one
 * process, each with a module of its own: the state lives on globalThis, the first call makes it,
 * the last teardown removes it.
 */
const shared = globalThis as typeof globalThis & { animalStoreDatabases?: Promise<RunDatabases> };

/** The value once `make` has run (the same promise for every caller), and whether it ever ran. */
function once<T>(make: () => Promise<T>): { get(): Promise<T>; started(): boolean } {
  let value: Promise<T> | undefined;
  return { get: () => (value ??= make()), started: () => value !== undefined };
}

async function runDatabases(): Promise<RunDatabases> {
  const given = process.env.TEST_POSTGRES_URL;
  const cluster = once<PrivatePostgres>(() => startPrivatePostgres());
  const postgres = once<RunPostgres>(async () => {
    const serverUrl = given ?? (await cluster.get()).url();
    const template = `animal_store_template_${randomBytes(6).toString('hex')}`;
    await onServer(serverUrl, `CREATE DATABASE "${template}"`);
    const url = new URL(serverUrl);
    url.pathname = `/${template}`;
    const { migrateDatabase } = await import('../src/db/database.js');
    await migrateDatabase(url.href);
    return { serverUrl, template };
  });
  const sqliteDir = once(async () => mkdtempSync(join(tmpdir(), 'animal-store-template-')));
  const sqlite = once<RunSqlite>(async () => {
    const templateFile = join(await sqliteDir.get(), 'animal-store.db');
    const { migrateDatabase } = await import('../src/db/database.js');
    await migrateDatabase(`file:${templateFile}`);
    return { templateFile };
  });

  const routes: Record<string, () => Promise<unknown>> = { '/postgresql': postgres.get, '/sqlite': sqlite.get };
  const endpoint = createServer((request, response) => {
    const route = routes[request.url ?? ''];
    const answer = (status: number, body: unknown) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (!route) return answer(404, { message: `no ${request.url} here` });
    route().then(
      (value) => answer(200, value),
      (error: Error) => answer(500, { message: error.message }),
    );
  });
  await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));

  return {
    postgres: postgres.get,
    sqlite: sqlite.get,
    endpoint,
    users: 0,
    async close() {
      await new Promise((resolve) => endpoint.close(resolve));
      if (postgres.started()) {
        const made = await postgres.get().catch(() => undefined);
        if (made && given) await onServer(given, `DROP DATABASE IF EXISTS "${made.template}" WITH (FORCE)`);
      }
      if (cluster.started()) await (await cluster.get()).destroy();
      if (sqliteDir.started()) rmSync(await sqliteDir.get(), { recursive: true, force: true });
    },
  };
}

async function onServer(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL is not reachable at ${serverUrl} (${(error as Error).message}). Unset TEST_POSTGRES_URL to have the ` +
        'tests start a PostgreSQL of their own, or point it at a running server where this user may CREATE DATABASE.',
    );
  }
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The run's PostgreSQL, started now if no test has asked for it yet (test/pgbouncer-setup.ts). */
export async function runPostgres(): Promise<RunPostgres> {
  if (!shared.animalStoreDatabases) throw new Error('runPostgres() is for global setups, after test/global-setup.ts');
  return (await shared.animalStoreDatabases).postgres();
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const databases = await (shared.animalStoreDatabases ??= runDatabases());
  databases.users += 1;
  const { port } = databases.endpoint.address() as { port: number };
  project.provide('testDatabasesUrl', `http://127.0.0.1:${port}`);
  // A project whose behaviour suites run on PostgreSQL needs it from its first test: start it now,
  // beside the workers' start-up (its tests wait for it when they ask; an error is theirs to report).
  if (['postgresql', 'pgbouncer'].includes(project.config.env?.TEST_DATABASE ?? '')) databases.postgres().catch(() => {});
  return async () => {
    databases.users -= 1;
    if (databases.users === 0) {
      delete shared.animalStoreDatabases;
      await databases.close();
    }
  };
}
