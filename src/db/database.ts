// The one place that opens the database: picks the driver adapter for DATABASE_URL, applies the
// connection settings, and hands out the Prisma client the repositories use.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import Sqlite from 'better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import type {
  SqlDriverAdapter,
  SqlDriverAdapterFactory,
  SqlMigrationAwareDriverAdapterFactory,
} from '@prisma/driver-adapter-utils';
import pg, { type PoolConfig } from 'pg';
import type { Config } from '../config.js';
import { PrismaClient as PostgresPrismaClient } from './generated/postgresql/client.js';
import { PrismaClient as SqlitePrismaClient } from './generated/sqlite/client.js';
import { applyMigrations } from './migrations.js';
import { providerOf, schemaLayout, sqliteFilePath, type Provider } from './providers.js';
import { busyRetryingStatements, busyRetryingTransactions, immediateTransactions, SQLITE_BUSY_TIMEOUT_MS } from './sqlite-busy-retry.js';

/**
 * The client the repositories use, whichever the provider. Both generated clients come from the
 * same models (prisma/models.prisma) and have the same methods; they differ only in the type of
 * an autoincrement id (`number` on SQLite, `bigint` on PostgreSQL), and the repositories read ids
 * through src/api/int64.ts, which takes either. So the rest of the code sees one type.
 */
export type PrismaClient = SqlitePrismaClient;

export interface Database {
  provider: Provider;
  prisma: PrismaClient;
  /**
   * SQLite: the better-sqlite3 handle beneath the driver-adapter connection `prisma` itself runs
   * on, for prepared statements on hot paths (src/pets/pet-repository.ts says why); the same
   * connection, so each sees the other's writes at once. Null on PostgreSQL, where the repository
   * uses `prisma`.
   */
  sqlite: Sqlite.Database | null;
  /**
   * The client for interactive transactions (`$transaction(async (tx) => …)`). On SQLite it has
   * a connection of its own: Prisma's SQLite adapter serialises transactions but not the other
   * statements on its one connection, so a plain insert sent while a transaction is open would
   * run inside it, and vanish if it rolled back. Today a transaction here never waits on I/O
   * (better-sqlite3 is synchronous), so nothing can slip in by timing; a connection of its own
   * makes that true by construction. On PostgreSQL it is `prisma` (the pool gives each
   * transaction its own connection).
   */
  transactions: PrismaClient;
  /** Resolves when the database answers a trivial query (the readiness check, /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The settings that shape the connection (PostgreSQL's pool; SQLite's are fixed below). */
export type DatabaseSettings = Pick<
  Config,
  'databaseUrl' | 'databasePoolSize' | 'databaseConnectTimeoutMs' | 'databaseQueryTimeoutMs'
>;

/**
 * How long a migration waits for SQLite's lock (another instance may be migrating too). The
 * service's own connections wait differently, without blocking the process: sqlite-busy-retry.ts.
 */
const MIGRATION_BUSY_TIMEOUT_MS = 5_000;

/**
 * How much longer the client waits for an answer than the server's statement_timeout: the server
 * cancels a slow statement itself; this client-side bound is for a connection that went silent
 * (server gone, network cut), so that no request waits forever.
 */
const CLIENT_QUERY_TIMEOUT_MARGIN_MS = 2_000;

function sqliteAdapter(databaseUrl: string, busyTimeoutMs: number) {
  const file = sqliteFilePath(databaseUrl);
  mkdirSync(dirname(file), { recursive: true });
  return new PrismaBetterSqlite3({ url: file, timeout: busyTimeoutMs });
}

function postgresPoolConfig(settings: DatabaseSettings): PoolConfig {
  return {
    connectionString: settings.databaseUrl,
    max: settings.databasePoolSize,
    // Waiting for a connection (a new one, or a free one from a busy pool) is bounded, so an
    // unreachable server answers 503 instead of holding requests.
    connectionTimeoutMillis: settings.databaseConnectTimeoutMs,
    statement_timeout: settings.databaseQueryTimeoutMs,
    query_timeout: settings.databaseQueryTimeoutMs + CLIENT_QUERY_TIMEOUT_MARGIN_MS,
    // Notice a dead peer on idle connections too (a server restart closes them; pg drops them).
    keepAlive: true,
  };
}

/** A lost connection's own 'error' event: its request has its own error (503); pg drops the connection. */
function ignoreConnectionError(): void {}

/**
 * The pool, with an 'error' listener on every connection for as long as it lives. A server that
 * ends connections (a restart, pg_terminate_backend) makes each report an 'error' event, and one
 * that arrives while no one listens (pg-pool and the adapter listen only at some moments of a
 * connection's life) would end the process: seen under pg_terminate_backend in
 * test/reliability/database-faults.test.ts.
 */
function postgresPool(settings: DatabaseSettings): pg.Pool {
  const pool = new pg.Pool(postgresPoolConfig(settings));
  pool.on('connect', (client) => client.on('error', ignoreConnectionError));
  return pool;
}

function requireProvider(databaseUrl: string): Provider {
  const provider = providerOf(databaseUrl);
  if (!provider) throw new Error(`Unsupported DATABASE_URL scheme: ${databaseUrl.split(':')[0]}`);
  return provider;
}

function migrationAdapter(databaseUrl: string): SqlMigrationAwareDriverAdapterFactory {
  return requireProvider(databaseUrl) === 'sqlite'
    ? sqliteAdapter(databaseUrl, MIGRATION_BUSY_TIMEOUT_MS)
    : new PrismaPg({ connectionString: databaseUrl, max: 1 });
}

/**
 * Applies the migrations in prisma/<provider>/migrations that the database has not seen yet, on a
 * connection of its own (run it before openDatabase: an open SQLite connection would hold locks).
 * Returns the names of the migrations applied, empty when the database was up to date.
 */
export async function migrateDatabase(databaseUrl: string): Promise<string[]> {
  return applyMigrations(migrationAdapter(databaseUrl), schemaLayout(requireProvider(databaseUrl)));
}

/**
 * The better-sqlite3 database an adapter connection wraps (the adapter keeps it as `client`). Checked
 * here, once, so that an adapter that changed its shape stops the service at start-up instead of
 * failing requests; the versions are pinned exactly (package.json) for the same reason.
 */
function driverHandle(connection: SqlDriverAdapter): Sqlite.Database {
  const client = (connection as unknown as { client?: unknown }).client;
  if (!(client instanceof Sqlite)) throw new Error('@prisma/adapter-better-sqlite3 no longer exposes its better-sqlite3 handle');
  return client;
}

/**
 * A factory that hands Prisma a connection we opened, so that we can use it too. We own it:
 * Prisma's $disconnect leaves it open (it may never have connected at all), close() disposes it.
 */
function sharedConnection(connection: SqlDriverAdapter): SqlDriverAdapterFactory {
  const lent = new Proxy(connection, {
    get(target, property) {
      if (property === 'dispose') return async () => {};
      const value: unknown = Reflect.get(target, property, target);
      // Bound to the connection itself: its methods use private fields.
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { provider: connection.provider, adapterName: connection.adapterName, connect: async () => lent };
}

/**
 * A SQLite connection with this service's settings, chosen for speed with the durability argued
 * in the README ("Reliability"). Measured here, one autocommitted insert: rollback journal + FULL
 * ~4.4 ms, WAL + FULL ~0.84 ms (an fsync per commit), WAL + NORMAL ~0.02 ms.
 * - journal_mode=WAL: readers run beside the writer; a commit appends to the WAL file.
 * - synchronous=NORMAL: no fsync per commit, only at checkpoints. After a crash of the process
 *   nothing committed is lost; after a power loss the last commits can be, but the file is never
 *   corrupt.
 * - journal_size_limit: the WAL file is truncated to 64 MiB after a checkpoint, so a burst of
 *   writes does not leave a large file behind.
 * The busy timeout (a writer waits for another process's lock) is the adapter's `timeout`: a few
 * ms, with asynchronous retries beyond it (sqlite-busy-retry.ts).
 * They run on the adapter connection, not through Prisma's query API: the first Prisma query
 * loads its query compiler (~30 MB, ~90 ms here), which the hot paths never need.
 */
async function openSqliteConnection(databaseUrl: string): Promise<SqlDriverAdapter> {
  const connection = await sqliteAdapter(databaseUrl, SQLITE_BUSY_TIMEOUT_MS).connect();
  for (const pragma of ['journal_mode = WAL', 'synchronous = NORMAL', `journal_size_limit = ${64 * 1024 * 1024}`]) {
    await connection.queryRaw({ sql: `PRAGMA ${pragma}`, args: [], argTypes: [] });
  }
  return connection;
}

export async function openDatabase(settings: DatabaseSettings): Promise<Database> {
  const provider = requireProvider(settings.databaseUrl);

  const ping = (prisma: PrismaClient) => async () => void (await prisma.$queryRawUnsafe('SELECT 1'));

  if (provider === 'postgresql') {
    const postgres = new PostgresPrismaClient({
      adapter: new PrismaPg(postgresPool(settings), { disposeExternalPool: true, onPoolError: ignoreConnectionError }),
    });
    // The same models and methods (see PrismaClient above); only the id's TypeScript type differs.
    const prisma = postgres as unknown as PrismaClient;
    return { provider, prisma, sqlite: null, transactions: prisma, ping: ping(prisma), close: () => prisma.$disconnect() };
  }

  const connection = await openSqliteConnection(settings.databaseUrl);
  const transactionConnection = await openSqliteConnection(settings.databaseUrl);
  // Waiting for another process's write lock never blocks the event loop (sqlite-busy-retry.ts).
  const prisma = new SqlitePrismaClient({ adapter: sharedConnection(busyRetryingStatements(connection)) });
  const transactions = busyRetryingTransactions(
    new SqlitePrismaClient({ adapter: sharedConnection(busyRetryingStatements(immediateTransactions(transactionConnection))) }),
  );
  return {
    provider,
    prisma,
    sqlite: driverHandle(connection),
    transactions,
    // On the adapter connection: a readiness probe must not load Prisma's query compiler either.
    ping: async () => void (await connection.queryRaw({ sql: 'SELECT 1', args: [], argTypes: [] })),
    close: async () => {
      await transactions.$disconnect();
      await prisma.$disconnect();
      await transactionConnection.dispose();
      await connection.dispose();
    },
  };
}
