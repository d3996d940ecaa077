// The one place that opens the database: picks the driver adapter for DATABASE_URL, applies the
// connection settings, and hands out the Prisma client and, on the same connections, the
// hot-path SQL the repositories use (src/db/sql.ts).
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import type Sqlite from 'better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import type { SqlDriverAdapter, SqlDriverAdapterFactory, SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import pg, { type PoolConfig } from 'pg';
import { PrismaClient as PostgresPrismaClient } from './generated/postgresql/client.js';
import { PrismaClient as SqlitePrismaClient } from './generated/sqlite/client.js';
import { applyMigrations, migrationsPending } from './migrations.js';
import { providerOf, schemaLayout, sqliteFilePath, type Provider } from './providers.js';
import { betterSqlite3HandleOf } from './sqlite-adapter-internals.js';
import { busyRetryingStatements, retryWhileBusy, SQLITE_BUSY_TIMEOUT_MS } from './sqlite-busy-retry.js';
import { postgresDatabase, sqliteDatabase, type SqlDatabase } from './sql.js';

/**
 * The client the repositories use, whichever the provider. Both generated clients come from the
 * same models (prisma/models.prisma) and have the same methods; they differ only in the type of
 * an autoincrement id (`number` on SQLite, `bigint` on PostgreSQL), and the repositories read ids
 * through src/domain/int64.ts, which takes either. So the rest of the code sees one type.
 */
export type PrismaClient = SqlitePrismaClient;

export interface Database {
  provider: Provider;
  /** Prisma's client: the models for everything that is not a hot path (keys, seeding, tools). */
  prisma: PrismaClient;
  /**
   * Hot-path SQL (src/db/sql.ts) on the connections `prisma` runs on: on SQLite the better-sqlite3
   * handle beneath its adapter connection, plus a second connection for transactions; on
   * PostgreSQL the pg pool its adapter was given. The same connections, so each sees the other's
   * writes at once.
   */
  sql: SqlDatabase;
  /**
   * SQLite: the better-sqlite3 handle beneath `prisma`'s adapter connection (the one `sql` runs
   * on). Null on PostgreSQL.
   */
  sqlite: Sqlite.Database | null;
  /** PostgreSQL: the pool's current figures; null on SQLite (one connection, no pool). */
  poolStats: () => PoolStats | null;
  /** Resolves when the database answers a trivial query (the readiness check, /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A connection pool's state, as pg.Pool counts it. */
export interface PoolStats {
  /** Connections open (idle or in use). */
  total: number;
  idle: number;
  /** Queries waiting for a connection: the pool is exhausted while this is above 0. */
  waiting: number;
  /** The most connections the pool opens (DATABASE_POOL_SIZE). */
  max: number;
}

/** The settings that shape the connection (PostgreSQL's pool; SQLite's are fixed below): src/config.ts. */
export interface DatabaseSettings {
  databaseUrl: string;
  databasePoolSize: number;
  databaseConnectTimeoutMs: number;
  databaseQueryTimeoutMs: number;
}

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

/** Whether migrateDatabase has anything to apply (a plain query: it never starts the schema engine). */
export async function databaseNeedsMigration(databaseUrl: string): Promise<boolean> {
  return migrationsPending(migrationAdapter(databaseUrl), schemaLayout(requireProvider(databaseUrl)));
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
      return typeof value === 'function' ? (value.bind(target) as unknown) : value;
    },
  });
  return { provider: connection.provider, adapterName: connection.adapterName, connect: async () => lent };
}

/**
 * A SQLite connection with this service's settings, chosen for speed with the durability argued
 * in docs/reliability.md (what each costs a commit: docs/benchmarks.md, "Figures behind the code").
 * - journal_mode=WAL: readers run beside the writer; a commit appends to the WAL file.
 * - synchronous=NORMAL: no fsync per commit, only at checkpoints. After a crash of the process
 *   nothing committed is lost; after a power loss the last commits can be, but the file is never
 *   corrupt.
 * - journal_size_limit: the WAL file is truncated to 64 MiB after a checkpoint, so a burst of
 *   writes does not leave a large file behind.
 * The busy timeout (a writer waits for another process's lock) is the adapter's `timeout`: a few
 * ms, with asynchronous retries beyond it (sqlite-busy-retry.ts).
 * They run on the adapter connection, not through Prisma's query API: the first Prisma query
 * loads its query compiler (memory and start-up time), which the hot paths never need.
 */
async function openSqliteConnection(databaseUrl: string): Promise<SqlDriverAdapter> {
  const connection = await sqliteAdapter(databaseUrl, SQLITE_BUSY_TIMEOUT_MS).connect();
  for (const pragma of ['journal_mode = WAL', 'synchronous = NORMAL', `journal_size_limit = ${64 * 1024 * 1024}`]) {
    // Switching a new file to WAL takes its lock, which another instance starting beside this one
    // may hold for a moment (migrating, or switching it too): wait for it like any statement.
    await retryWhileBusy(() => connection.queryRaw({ sql: `PRAGMA ${pragma}`, args: [], argTypes: [] }));
  }
  return connection;
}

/** A lost connection's own 'error' event: its request has its own error (503); pg drops the connection. */
function ignoreConnectionError(): void {}

/**
 * The pg pool for the service: ours, handed to Prisma's adapter (PrismaPg takes a pg.Pool in its
 * public constructor), so the hot-path SQL runs on the same connections without reaching into the
 * adapter. A server that ends connections (a restart, pg_terminate_backend) makes each report an
 * 'error' event, on the pool for idle ones and on the connection itself otherwise; one that
 * arrives while no one listens would end the process (seen under pg_terminate_backend in
 * test/reliability/database-faults.test.ts), so both have a listener. pg drops a broken
 * connection and the next query opens a new one.
 */
function openPostgresPool(settings: DatabaseSettings): pg.Pool {
  const pool = new pg.Pool(postgresPoolConfig(settings));
  pool.on('error', ignoreConnectionError);
  pool.on('connect', (client) => client.on('error', ignoreConnectionError));
  return pool;
}

export async function openDatabase(settings: DatabaseSettings): Promise<Database> {
  const provider = requireProvider(settings.databaseUrl);

  if (provider === 'postgresql') {
    const pool = openPostgresPool(settings);
    const postgres = new PostgresPrismaClient({ adapter: new PrismaPg(pool, { onPoolError: ignoreConnectionError }) });
    // The same models and methods (see PrismaClient above); only the id's TypeScript type differs.
    const prisma = postgres as unknown as PrismaClient;
    return {
      provider,
      prisma,
      sql: postgresDatabase(pool),
      sqlite: null,
      poolStats: () => ({ max: pool.options.max, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      // On the pool: a readiness probe need not load Prisma's query compiler.
      ping: async () => void (await pool.query('SELECT 1')),
      close: async () => {
        await prisma.$disconnect();
        await pool.end();
      },
    };
  }

  const connection = await openSqliteConnection(settings.databaseUrl);
  const transactionConnection = await openSqliteConnection(settings.databaseUrl);
  // Waiting for another process's write lock never blocks the event loop (sqlite-busy-retry.ts).
  const prisma = new SqlitePrismaClient({ adapter: sharedConnection(busyRetryingStatements(connection)) });
  const sqlite = betterSqlite3HandleOf(connection);
  return {
    provider,
    prisma,
    sql: sqliteDatabase(sqlite, betterSqlite3HandleOf(transactionConnection)),
    sqlite,
    poolStats: () => null,
    // On the adapter connection: a readiness probe must not load Prisma's query compiler either.
    ping: async () => void (await connection.queryRaw({ sql: 'SELECT 1', args: [], argTypes: [] })),
    close: async () => {
      await prisma.$disconnect();
      await transactionConnection.dispose();
      await connection.dispose();
    },
  };
}
