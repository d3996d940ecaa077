// The one place that opens the database: picks the driver adapter for DATABASE_URL, applies the
// connection settings, and hands out the Prisma client the repositories use.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import type { SqlDriverAdapter, SqlDriverAdapterFactory, SqlQueryable } from '@prisma/driver-adapter-utils';
import { PrismaClient } from './generated/sqlite/client.js';
import { applyMigrations } from './migrations.js';
import { providerOf, schemaLayout, sqliteFilePath, type Provider } from './providers.js';

export type { PrismaClient };

export interface Database {
  provider: Provider;
  prisma: PrismaClient;
  /**
   * The driver-adapter connection the Prisma client itself runs on, for hand-written SQL on hot
   * paths (src/pets/pet-repository.ts says why). The same connection, so each sees the other's
   * writes at once and SQLite's lock is never contended inside this process.
   */
  connection: SqlQueryable;
  close(): Promise<void>;
}

/** How long a writer waits for SQLite's lock before giving up (another process may hold it). */
const SQLITE_BUSY_TIMEOUT_MS = 5_000;

function sqliteAdapter(databaseUrl: string) {
  const file = sqliteFilePath(databaseUrl);
  mkdirSync(dirname(file), { recursive: true });
  return new PrismaBetterSqlite3({ url: file, timeout: SQLITE_BUSY_TIMEOUT_MS });
}

function requireProvider(databaseUrl: string): Provider {
  const provider = providerOf(databaseUrl);
  if (!provider) throw new Error(`Unsupported DATABASE_URL scheme: ${databaseUrl.split(':')[0]}`);
  return provider;
}

/**
 * Applies the migrations in prisma/<provider>/migrations that the database has not seen yet, on a
 * connection of its own (run it before openDatabase: an open SQLite connection would hold locks).
 * Returns the names of the migrations applied, empty when the database was up to date.
 */
export async function migrateDatabase(databaseUrl: string): Promise<string[]> {
  const provider = requireProvider(databaseUrl);
  return applyMigrations(sqliteAdapter(databaseUrl), schemaLayout(provider));
}

/** A factory that hands Prisma a connection we opened, so that we can use it too. */
function sharedConnection(connection: SqlDriverAdapter): SqlDriverAdapterFactory {
  return { provider: connection.provider, adapterName: connection.adapterName, connect: async () => connection };
}

export async function openDatabase(databaseUrl: string): Promise<Database> {
  const provider = requireProvider(databaseUrl);

  const connection = await sqliteAdapter(databaseUrl).connect();
  const prisma = new PrismaClient({ adapter: sharedConnection(connection) });
  // SQLite settings, chosen for speed with the durability argued in the README ("Storage
  // settings"). Measured here, one autocommitted insert: rollback journal + FULL ~4.4 ms, WAL + FULL
  // ~0.84 ms (an fsync per commit), WAL + NORMAL ~0.02 ms.
  // - journal_mode=WAL: readers run beside the writer; a commit appends to the WAL file.
  // - synchronous=NORMAL: no fsync per commit, only at checkpoints. After a crash of the process
  //   nothing committed is lost; after a power loss the last commits can be, but the file is
  //   never corrupt.
  // - journal_size_limit: the WAL file is truncated to 64 MiB after a checkpoint, so a burst of
  //   writes does not leave a large file behind.
  // The busy timeout (a writer waits for another process's lock) is the adapter's `timeout` above.
  // They run on the adapter connection, not through Prisma's query API: the first Prisma query
  // loads its query compiler (~30 MB, ~90 ms here), which the service otherwise never needs.
  for (const pragma of ['journal_mode = WAL', 'synchronous = NORMAL', `journal_size_limit = ${64 * 1024 * 1024}`]) {
    await connection.queryRaw({ sql: `PRAGMA ${pragma}`, args: [], argTypes: [] });
  }

  return {
    provider,
    prisma,
    connection,
    close: () => prisma.$disconnect(),
  };
}
