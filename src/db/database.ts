// The one place that opens the database: picks the driver adapter for DATABASE_URL, applies the
// connection settings, and hands out the Prisma client the repositories use.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import type { SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import type { PoolConfig } from 'pg';
import type { Config } from '../config.js';
import { PrismaClient as PostgresPrismaClient } from './generated/postgresql/client.js';
import { PrismaClient as SqlitePrismaClient } from './generated/sqlite/client.js';
import { applyMigrations } from './migrations.js';
import { providerOf, schemaLayout, sqliteFilePath, type Provider } from './providers.js';

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
  /** Resolves when the database answers a trivial query (the readiness check, /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The settings that shape the connection (PostgreSQL's pool; SQLite's are fixed below). */
export type DatabaseSettings = Pick<
  Config,
  'databaseUrl' | 'databasePoolSize' | 'databaseConnectTimeoutMs' | 'databaseQueryTimeoutMs'
>;

/** How long a writer waits for SQLite's lock before giving up (another process may hold it). */
const SQLITE_BUSY_TIMEOUT_MS = 5_000;

/**
 * How much longer the client waits for an answer than the server's statement_timeout: the server
 * cancels a slow statement itself; this client-side bound is for a connection that went silent
 * (server gone, network cut), so that no request waits forever.
 */
const CLIENT_QUERY_TIMEOUT_MARGIN_MS = 2_000;

function sqliteAdapter(databaseUrl: string) {
  const file = sqliteFilePath(databaseUrl);
  mkdirSync(dirname(file), { recursive: true });
  return new PrismaBetterSqlite3({ url: file, timeout: SQLITE_BUSY_TIMEOUT_MS });
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
    ? sqliteAdapter(databaseUrl)
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

export async function openDatabase(settings: DatabaseSettings): Promise<Database> {
  const provider = requireProvider(settings.databaseUrl);

  const ping = (prisma: PrismaClient) => async () => void (await prisma.$queryRawUnsafe('SELECT 1'));

  if (provider === 'postgresql') {
    const postgres = new PostgresPrismaClient({ adapter: new PrismaPg(postgresPoolConfig(settings)) });
    // The same models and methods (see PrismaClient above); only the id's TypeScript type differs.
    const prisma = postgres as unknown as PrismaClient;
    return { provider, prisma, ping: ping(prisma), close: () => prisma.$disconnect() };
  }

  const prisma = new SqlitePrismaClient({ adapter: sqliteAdapter(settings.databaseUrl) });
  // WAL lets readers run beside the writer and makes a commit one append instead of a journal
  // rewrite (~2 ms → ~0.2 ms an insert here). synchronous=NORMAL in WAL mode stays consistent
  // after a crash; a power loss can drop the last commits, never corrupt the file (README).
  await prisma.$queryRawUnsafe('PRAGMA journal_mode = WAL');
  await prisma.$executeRawUnsafe('PRAGMA synchronous = NORMAL');

  return {
    provider,
    prisma,
    ping: ping(prisma),
    close: () => prisma.$disconnect(),
  };
}
