// Opens the database DATABASE_URL names: the Prisma client, and the hot-path SQL (src/db/sql.ts) on
// connections opened here through the drivers' public APIs.
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

/** Either provider's client: ids differ in type only (read through src/domain/pet-schemas.ts). */
export type PrismaClient = SqlitePrismaClient;

export interface Database {
  provider: Provider;
  dependency: DatabaseDependency;
  prisma: PrismaClient;
  /** On PostgreSQL on `prisma`'s pg pool; on SQLite on connections of its own. */
  sql: SqlDatabase;
  sqlite: Sqlite.Database | null;
  poolStats: () => PoolStats | null;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
  max: number;
  queueFull: number;
}

export interface DatabaseSettings {
  databaseUrl: string;
  databasePoolSize: number;
  databaseConnectTimeoutMs: number;
  databaseQueryTimeoutMs: number;
  databasePoolQueueLimit?: number;
}

/** SQLite's lock wait for migrations; serving connections retry asynchronously (sqlite-busy-retry.ts). */
const MIGRATION_BUSY_TIMEOUT_MS = 5_000;

/** The client's bound past statement_timeout, for a connection gone silent (server gone, network cut). */
const CLIENT_QUERY_TIMEOUT_MARGIN_MS = 2_000;

export interface DatabaseLog {
  error(fields: Record<string, unknown>, message: string): void;
}

function sqliteAdapter(databaseUrl: string, busyTimeoutMs: number) {
  const file = sqliteFilePath(databaseUrl);
  mkdirSync(dirname(file), { recursive: true });
  return new PrismaBetterSqlite3({ url: file, timeout: busyTimeoutMs });
}

/** A pooler refuses statement_timeout, so through one the client's timeout is the bound (docs/operations.md, PgBouncer). */
function postgresPoolConfig(settings: DatabaseSettings, target: PostgresTarget): PoolConfig {
  return {
    connectionString: target.connectionString,
    max: settings.databasePoolSize,
    connectionTimeoutMillis: settings.databaseConnectTimeoutMs,
    ...(target.transactionPooler
      ? { query_timeout: settings.databaseQueryTimeoutMs }
      : {
          statement_timeout: settings.databaseQueryTimeoutMs,
          query_timeout: settings.databaseQueryTimeoutMs + CLIENT_QUERY_TIMEOUT_MARGIN_MS,
        }),
    keepAlive: true,
    // A turn's statements share a connection (src/db/sql.ts); a transaction pooler is not sent pipelines.
    pipeline: !target.transactionPooler,
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

const MIGRATIONS_NEED_A_DIRECT_URL =
  'Migrations are pending, and DATABASE_URL goes through a transaction pooler (pgbouncer=true), where they are unsafe ' +
  "(the schema engine's advisory lock would stay held on a pooled server connection). Set DATABASE_DIRECT_URL to a " +
  'connection straight to PostgreSQL: migrations run there (docs/operations.md, PgBouncer).';

/** On a connection of its own, before openDatabase (an open SQLite connection holds locks); never through a pooler. */
export async function migrateDatabase(databaseUrl: string): Promise<string[]> {
  const provider = requireProvider(databaseUrl);
  const adapter = migrationAdapter(databaseUrl);
  if (provider === 'postgresql' && postgresTarget(databaseUrl).transactionPooler) {
    if (await migrationsPending(adapter, schemaLayout(provider))) throw new Error(MIGRATIONS_NEED_A_DIRECT_URL);
    return [];
  }
  return applyMigrations(adapter, schemaLayout(provider));
}

export async function databaseNeedsMigration(databaseUrl: string): Promise<boolean> {
  return migrationsPending(migrationAdapter(databaseUrl), schemaLayout(requireProvider(databaseUrl)));
}

/** Set per connection. @see docs/reliability.md "Storage settings and durability" */
const SQLITE_PRAGMAS = ['journal_mode = WAL', 'synchronous = NORMAL', `journal_size_limit = ${64 * 1024 * 1024}`];

/** Our own better-sqlite3 connection for hot-path SQL and key lookups; int64 as bigint, as through Prisma. */
async function openSqliteHandle(databaseUrl: string): Promise<Sqlite.Database> {
  const file = sqliteFilePath(databaseUrl);
  mkdirSync(dirname(file), { recursive: true });
  const handle = new Sqlite(file, { timeout: SQLITE_BUSY_TIMEOUT_MS });
  try {
    handle.defaultSafeIntegers(true);
    // Switching to WAL takes the lock, which an instance starting beside this one may hold.
    for (const pragma of SQLITE_PRAGMAS) await retryWhileBusy(() => handle.pragma(pragma));
  } catch (error) {
    handle.close();
    throw error;
  }
  return handle;
}

/** Prisma's connection, busy-retried; pragmas on the adapter, as Prisma's query API would load its query compiler. */
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

/** An unlistened pg 'error' event would end the process; the request already has its 503. */
function ignoreConnectionError(): void {}

type ConnectCallback = Parameters<pg.Pool['connect']> extends [infer C] ? C : never;

/**
 * pg bounds the wait in time only: past `queueLimit` statements waiting for a connection, the next fail at once (503).
 * A `connect` counts one; a pipelined batch (`connectFor`) counts each of its statements.
 * @see docs/architecture.md "Where we depart from a library, and why"
 */
class BoundedQueuePool extends pg.Pool {
  refused = 0;
  /** Statements of pending `connectFor` batches beyond the one each counts in pg's `waitingCount`. */
  private batched = 0;

  constructor(
    config: PoolConfig,
    private readonly queueLimit: number,
  ) {
    super(config);
  }

  /** Statements waiting for a connection. */
  get waitingStatements(): number {
    return this.waitingCount + this.batched;
  }

  /** How many of `count` statements may wait for a connection now; the others are refused (and counted). */
  admit(count: number): number {
    const exhausted = this.idleCount === 0 && this.totalCount >= (this.options.max ?? 10);
    const admitted = exhausted ? Math.min(count, Math.max(0, this.queueLimit - this.waitingStatements)) : count;
    this.refused += count - admitted;
    return admitted;
  }

  /** A connection for `count` admitted statements, sent together. */
  async connectFor(count: number): Promise<pg.PoolClient> {
    this.batched += count - 1;
    try {
      return await super.connect();
    } finally {
      this.batched -= count - 1;
    }
  }

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
    if (this.admit(1) === 0) {
      const error = new Error(POOL_QUEUE_FULL);
      if (callback) return void process.nextTick(callback, error, undefined, () => {});
      return Promise.reject(error);
    }
    return callback ? super.connect(callback) : super.connect();
  }
}

/** Handed to PrismaPg, so hot-path SQL shares its connections. */
function openPostgresPool(settings: DatabaseSettings, target: PostgresTarget): BoundedQueuePool {
  const pool = new BoundedQueuePool(postgresPoolConfig(settings, target), settings.databasePoolQueueLimit ?? Infinity);
  pool.on('error', ignoreConnectionError);
  pool.on('connect', (client) => client.on('error', ignoreConnectionError));
  return pool;
}

/** Logs once per database the first sign of an unmarked transaction pooler. */
function configurationFaultReporter(log: DatabaseLog): (error: unknown) => void {
  let told = false;
  return (error) => {
    if (told || databaseFault(error) !== 'configuration') return;
    told = true;
    log.error({ err: error, code: (error as { code?: unknown }).code }, POOLER_HINT);
  };
}

/** `log` hears, once each, of faults only an operator can fix. */
export async function openDatabase(settings: DatabaseSettings, log?: DatabaseLog): Promise<Database> {
  const provider = requireProvider(settings.databaseUrl);

  if (provider === 'postgresql') {
    const target = postgresTarget(settings.databaseUrl);
    const pool = openPostgresPool(settings, target);
    const reportFault = log ? configurationFaultReporter(log) : undefined;
    const postgres = new PostgresPrismaClient({ adapter: new PrismaPg(pool, { onPoolError: ignoreConnectionError }) });
    const prisma = postgres as unknown as PrismaClient;
    return {
      provider,
      dependency: databaseDependency(settings.databaseUrl),
      prisma,
      sql: postgresDatabase(pool, {
        pooler: target.transactionPooler,
        onError: reportFault,
      }),
      sqlite: null,
      poolStats: () => ({
        max: pool.options.max,
        total: pool.totalCount,
        idle: pool.idleCount,
        waiting: pool.waitingStatements,
        queueFull: pool.refused,
      }),
      // On the pool, so a probe need not load Prisma's query compiler; a refusing pooler shows here first.
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
    // On our connection: a probe must not load Prisma's query compiler.
    ping: async () => void probe.get(),
    close: async () => {
      await prisma.$disconnect();
      transactionHandle.close();
      handle.close();
    },
  };
}
