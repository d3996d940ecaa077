// The one place that opens the database: picks the driver adapter for DATABASE_URL, applies the
// connection settings, and hands out the Prisma client and the hot-path SQL the repositories use
// (src/db/sql.ts), each on connections opened here through the drivers' public APIs.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import Sqlite from 'better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import type { SqlDriverAdapterFactory, SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import pg, { type PoolConfig } from 'pg';
import { PrismaClient as PostgresPrismaClient } from './generated/postgresql/client.js';
import { PrismaClient as SqlitePrismaClient } from './generated/sqlite/client.js';
import { applyMigrations, migrationsPending } from './migrations.js';
import { databaseFault, POOL_QUEUE_FULL, POOLER_HINT } from './database-errors.js';
import {
  databaseDependency,
  postgresTarget,
  providerOf,
  schemaLayout,
  sqliteFilePath,
  type DatabaseDependency,
  type PostgresTarget,
  type Provider,
} from './providers.js';
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
  /** What the service depends on through it (SQLite, PostgreSQL or PgBouncer, and where), for the log. */
  dependency: DatabaseDependency;
  /** Prisma's client: the models for everything that is not a hot path (keys, seeding, tools). */
  prisma: PrismaClient;
  /**
   * Hot-path SQL (src/db/sql.ts). On PostgreSQL it runs on the pg pool `prisma`'s adapter was
   * given. On SQLite it runs on two better-sqlite3 connections of its own to the same file (one
   * for statements, one for transactions) beside Prisma's adapter connection; in WAL mode each
   * connection sees what another committed from its next statement on. Either way a write by one
   * is seen by the other at once.
   */
  sql: SqlDatabase;
  /** SQLite: the better-sqlite3 connection `sql` runs its statements on. Null on PostgreSQL. */
  sqlite: Sqlite.Database | null;
  /** PostgreSQL: the pool's current figures; null on SQLite (no pool). */
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
  /** Queries refused at once because DATABASE_POOL_QUEUE_LIMIT were already waiting (answered 503). */
  queueFull: number;
}

/** The settings that shape the connection (PostgreSQL's pool; SQLite's are fixed below): src/config.ts. */
export interface DatabaseSettings {
  /** PostgreSQL: `?pgbouncer=true` when it goes through a transaction pooler (providers.ts, postgresTarget). */
  databaseUrl: string;
  databasePoolSize: number;
  databaseConnectTimeoutMs: number;
  databaseQueryTimeoutMs: number;
  /** Queries that may wait for a pooled connection; more fail at once (src/config.ts sets it; absent: no bound). */
  databasePoolQueueLimit?: number;
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

/** Where the service logs what an operator must change (main.ts passes its logger). */
export interface DatabaseLog {
  error(fields: Record<string, unknown>, message: string): void;
}

function sqliteAdapter(databaseUrl: string, busyTimeoutMs: number) {
  const file = sqliteFilePath(databaseUrl);
  mkdirSync(dirname(file), { recursive: true });
  return new PrismaBetterSqlite3({ url: file, timeout: busyTimeoutMs });
}

/**
 * The pool's settings. Directly on PostgreSQL, every connection asks for the server's
 * statement_timeout when it starts. A transaction pooler refuses that startup parameter
 * (PgBouncer: "unsupported startup parameter"), and a SET would reach one server connection
 * only, so through one the client's own timeout is the bound: a statement that has not answered
 * within DATABASE_QUERY_TIMEOUT_MS fails its request with 503 (the server-side timeout is then
 * the role's or the pooler's setting: docs/operations.md, PgBouncer).
 */
function postgresPoolConfig(settings: DatabaseSettings, target: PostgresTarget): PoolConfig {
  return {
    connectionString: target.connectionString,
    max: settings.databasePoolSize,
    // Waiting for a connection (a new one, or a free one from a busy pool) is bounded, so an
    // unreachable server answers 503 instead of holding requests.
    connectionTimeoutMillis: settings.databaseConnectTimeoutMs,
    ...(target.transactionPooler
      ? { query_timeout: settings.databaseQueryTimeoutMs }
      : {
          statement_timeout: settings.databaseQueryTimeoutMs,
          query_timeout: settings.databaseQueryTimeoutMs + CLIENT_QUERY_TIMEOUT_MARGIN_MS,
        }),
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
    : new PrismaPg({ connectionString: postgresTarget(databaseUrl).connectionString, max: 1 });
}

/**
 * Why migrations never run through a transaction pooler: the schema engine holds a session-level
 * advisory lock while it migrates, and through the pooler that lock stays on whichever server
 * connection took it, held after the migration, so the next migration waits for it forever.
 */
const MIGRATIONS_NEED_A_DIRECT_URL =
  'Migrations are pending, and DATABASE_URL goes through a transaction pooler (pgbouncer=true), where they are unsafe ' +
  "(the schema engine's advisory lock would stay held on a pooled server connection). Set DATABASE_DIRECT_URL to a " +
  'connection straight to PostgreSQL: migrations run there (docs/operations.md, PgBouncer).';

/**
 * Applies the migrations in prisma/<provider>/migrations that the database has not seen yet, on a
 * connection of its own (run it before openDatabase: an open SQLite connection would hold locks).
 * Returns the names of the migrations applied, empty when the database was up to date. A URL
 * through a transaction pooler may be checked (a plain query), but nothing is applied through it.
 */
export async function migrateDatabase(databaseUrl: string): Promise<string[]> {
  const provider = requireProvider(databaseUrl);
  const adapter = migrationAdapter(databaseUrl);
  if (provider === 'postgresql' && postgresTarget(databaseUrl).transactionPooler) {
    if (await migrationsPending(adapter, schemaLayout(provider))) throw new Error(MIGRATIONS_NEED_A_DIRECT_URL);
    return [];
  }
  return applyMigrations(adapter, schemaLayout(provider));
}

/** Whether migrateDatabase has anything to apply (a plain query: it never starts the schema engine). */
export async function databaseNeedsMigration(databaseUrl: string): Promise<boolean> {
  return migrationsPending(migrationAdapter(databaseUrl), schemaLayout(requireProvider(databaseUrl)));
}

/**
 * This service's SQLite settings, chosen for speed with the durability argued in
 * docs/reliability.md (what each costs a commit: docs/benchmarks.md, "Figures behind the code's choices").
 * - journal_mode=WAL: readers run beside the writer; a commit appends to the WAL file, and every
 *   other connection to the file (this process's others included) sees it from its next statement.
 * - synchronous=NORMAL: no fsync per commit, only at checkpoints. After a crash of the process
 *   nothing committed is lost; after a power loss the last commits can be, but the file is never
 *   corrupt.
 * - journal_size_limit: the WAL file is truncated to 64 MiB after a checkpoint, so a burst of
 *   writes does not leave a large file behind.
 * synchronous and journal_size_limit hold per connection, so every connection applies them.
 * The busy timeout (a writer waits for another connection's lock) is a few ms, with asynchronous
 * retries beyond it (sqlite-busy-retry.ts).
 */
const SQLITE_PRAGMAS = ['journal_mode = WAL', 'synchronous = NORMAL', `journal_size_limit = ${64 * 1024 * 1024}`];

/**
 * A better-sqlite3 connection of the service's own, for the hot-path SQL (src/db/sql.ts) and the
 * API-key lookup: opened here, on the same file as Prisma's adapter connection, with the same
 * settings. 64-bit integers come back as bigint, as through Prisma's adapter.
 */
async function openSqliteHandle(databaseUrl: string): Promise<Sqlite.Database> {
  const file = sqliteFilePath(databaseUrl);
  mkdirSync(dirname(file), { recursive: true });
  const handle = new Sqlite(file, { timeout: SQLITE_BUSY_TIMEOUT_MS });
  try {
    handle.defaultSafeIntegers(true);
    // Switching a new file to WAL takes its lock, which another instance starting beside this one
    // may hold for a moment (migrating, or switching it too): wait for it like any statement.
    for (const pragma of SQLITE_PRAGMAS) await retryWhileBusy(() => handle.pragma(pragma));
  } catch (error) {
    handle.close();
    throw error;
  }
  return handle;
}

/**
 * Prisma's adapter connection (keys, seeding, tools), opened at Prisma's first query and closed
 * by its $disconnect: the hot path never needs it. Its statements are retried while another
 * connection holds the write lock (sqlite-busy-retry.ts). The settings run on the adapter
 * connection, not through Prisma's query API, which would load its query compiler first.
 */
function prismaSqliteAdapter(databaseUrl: string): SqlDriverAdapterFactory {
  const factory = sqliteAdapter(databaseUrl, SQLITE_BUSY_TIMEOUT_MS);
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    async connect() {
      const connection = await factory.connect();
      for (const pragma of SQLITE_PRAGMAS) {
        await retryWhileBusy(() => connection.queryRaw({ sql: `PRAGMA ${pragma}`, args: [], argTypes: [] }));
      }
      return busyRetryingStatements(connection);
    },
  };
}

/** A lost connection's own 'error' event: its request has its own error (503); pg drops the connection. */
function ignoreConnectionError(): void {}

type ConnectCallback = Parameters<pg.Pool['connect']> extends [infer C] ? C : never;

/**
 * pg's Pool with a bounded wait queue: with `queueLimit` queries already waiting for a connection,
 * the next fails at once (a fault src/db/database-errors.ts calls 'unavailable': 503 with
 * Retry-After) instead of joining a queue that one greedy client could grow without end. pg bounds
 * the wait in time only (`connectionTimeoutMillis`), not in length. Both pg's `pool.query` and
 * Prisma's adapter take connections through `connect`; the override reads only pg's public counters.
 */
class BoundedQueuePool extends pg.Pool {
  /** Queries refused at once so far. */
  refused = 0;

  constructor(
    config: PoolConfig,
    private readonly queueLimit: number,
  ) {
    super(config);
  }

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
    const exhausted = this.idleCount === 0 && this.totalCount >= (this.options.max ?? 10);
    if (exhausted && this.waitingCount >= this.queueLimit) {
      this.refused++;
      const error = new Error(POOL_QUEUE_FULL);
      if (callback) return void process.nextTick(callback, error, undefined, () => {});
      return Promise.reject(error);
    }
    return callback ? super.connect(callback) : super.connect();
  }
}

/**
 * The pg pool for the service: ours, handed to Prisma's adapter (PrismaPg takes a pg.Pool in its
 * public constructor), so the hot-path SQL runs on the same connections without reaching into the
 * adapter. A server that ends connections (a restart, pg_terminate_backend) makes each report an
 * 'error' event, on the pool for idle ones and on the connection itself otherwise; one that
 * arrives while no one listens would end the process (seen under pg_terminate_backend in
 * test/reliability/database-faults.test.ts), so both have a listener. pg drops a broken
 * connection and the next query opens a new one. Without a queue limit (the tools), pg's own
 * unbounded queue.
 */
function openPostgresPool(settings: DatabaseSettings, target: PostgresTarget): BoundedQueuePool {
  const pool = new BoundedQueuePool(postgresPoolConfig(settings, target), settings.databasePoolQueueLimit ?? Infinity);
  pool.on('error', ignoreConnectionError);
  pool.on('connect', (client) => client.on('error', ignoreConnectionError));
  return pool;
}

/**
 * Logs, once per opened database (so once per process), the first failure of a hot-path statement
 * or a readiness probe that shows DATABASE_URL going through a transaction pooler without saying
 * so (src/db/database-errors.ts: a 'configuration' fault). The requests answer 503 meanwhile; the
 * operator needs the one line that says what to change, not one per request.
 */
function configurationFaultReporter(log: DatabaseLog): (error: unknown) => void {
  let told = false;
  return (error) => {
    if (told || databaseFault(error) !== 'configuration') return;
    told = true;
    log.error({ err: error, code: (error as { code?: unknown }).code }, POOLER_HINT);
  };
}

/**
 * Opens the database DATABASE_URL names. `log` hears of faults only the operator can fix (once
 * each); by default they are not logged.
 */
export async function openDatabase(settings: DatabaseSettings, log?: DatabaseLog): Promise<Database> {
  const provider = requireProvider(settings.databaseUrl);

  if (provider === 'postgresql') {
    const target = postgresTarget(settings.databaseUrl);
    const pool = openPostgresPool(settings, target);
    const reportFault = log ? configurationFaultReporter(log) : undefined;
    const postgres = new PostgresPrismaClient({ adapter: new PrismaPg(pool, { onPoolError: ignoreConnectionError }) });
    // The same models and methods (see PrismaClient above); only the id's TypeScript type differs.
    const prisma = postgres as unknown as PrismaClient;
    return {
      provider,
      dependency: databaseDependency(settings.databaseUrl),
      prisma,
      sql: postgresDatabase(pool, {
        namedStatements: !target.transactionPooler,
        onError: reportFault,
      }),
      sqlite: null,
      poolStats: () => ({
        max: pool.options.max,
        total: pool.totalCount,
        idle: pool.idleCount,
        waiting: pool.waitingCount,
        queueFull: pool.refused,
      }),
      // On the pool: a readiness probe need not load Prisma's query compiler. Its failures are
      // looked at too: a pooler that refuses our connections fails the probes before any request.
      ping: async () => {
        try {
          await pool.query('SELECT 1');
        } catch (error) {
          reportFault?.(error);
          throw error;
        }
      },
      close: async () => {
        await prisma.$disconnect();
        await pool.end();
      },
    };
  }

  // Two connections of our own (statements; transactions, one at a time: src/db/sql.ts) and
  // Prisma's. In WAL mode each sees what the others committed from its next statement on.
  const handle = await openSqliteHandle(settings.databaseUrl);
  let transactionHandle: Sqlite.Database;
  try {
    transactionHandle = await openSqliteHandle(settings.databaseUrl);
  } catch (error) {
    handle.close();
    throw error;
  }
  const prisma = new SqlitePrismaClient({ adapter: prismaSqliteAdapter(settings.databaseUrl) });
  const probe = handle.prepare('SELECT 1');
  return {
    provider,
    dependency: databaseDependency(settings.databaseUrl),
    prisma,
    sql: sqliteDatabase(handle, transactionHandle),
    sqlite: handle,
    poolStats: () => null,
    // On our connection: a readiness probe must not load Prisma's query compiler.
    ping: async () => void probe.get(),
    close: async () => {
      await prisma.$disconnect();
      transactionHandle.close();
      handle.close();
    },
  };
}
