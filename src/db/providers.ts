// Which database a DATABASE_URL names, and where that provider's schema and migrations live.
import { fileURLToPath } from 'node:url';
import { isAbsolute, join, resolve } from 'node:path';

/** The databases the service runs on, named as Prisma names their providers. */
export const PROVIDERS = ['sqlite', 'postgresql'] as const;
export type Provider = (typeof PROVIDERS)[number];

export interface SchemaLayout {
  provider: Provider;
  /** The provider's Prisma schema (the generated client for it lives in src/db/generated/<provider>). */
  schemaPath: string;
  /** Its migration folders, in `prisma migrate` layout. */
  migrationsDir: string;
}

/** The repository root: this file is src/db/providers.ts, or dist/db/providers.js once built. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The data model both providers' schemas are written from (see src/db/provider-schemas.ts). */
export const MODELS_PATH = join(PROJECT_ROOT, 'prisma', 'models.prisma');

export function schemaLayout(provider: Provider): SchemaLayout {
  const dir = join(PROJECT_ROOT, 'prisma', provider);
  return { provider, schemaPath: join(dir, 'schema.prisma'), migrationsDir: join(dir, 'migrations') };
}

/**
 * `file:` URLs are SQLite; `postgresql://` and `postgres://` (both spellings libpq accepts) are
 * PostgreSQL; anything else is refused when the settings are read.
 */
export function providerOf(databaseUrl: string): Provider | undefined {
  if (databaseUrl.startsWith('file:')) return 'sqlite';
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) return 'postgresql';
  return undefined;
}

/**
 * The absolute path of a SQLite `file:` URL. Relative paths (`file:./data/x.db`) are taken from
 * the working directory, which is the repository root under every npm script.
 */
export function sqliteFilePath(databaseUrl: string, cwd = process.cwd()): string {
  let path = databaseUrl.slice('file:'.length);
  if (path.startsWith('//')) path = fileURLToPath(databaseUrl); // file:///abs/path.db
  const withoutQuery = path.split('?')[0] ?? path;
  return isAbsolute(withoutQuery) ? withoutQuery : resolve(cwd, withoutQuery);
}

/**
 * The query parameter that marks a PostgreSQL URL as going through a transaction pooler (PgBouncer
 * in `pool_mode = transaction`, or a managed pooler): Prisma's own convention, `?pgbouncer=true`.
 */
const TRANSACTION_POOLER_PARAMETER = 'pgbouncer';

export interface PostgresTarget {
  /** The URL for the driver: DATABASE_URL without the pooler parameter. */
  connectionString: string;
  /**
   * Whether connections go through a transaction pooler: consecutive statements of one client
   * connection may run on different server connections, so nothing may rely on session state
   * (named prepared statements, SET, advisory locks, startup parameters the pooler refuses).
   */
  transactionPooler: boolean;
}

/** Reads a PostgreSQL URL's pooler parameter (`true` or `false`, absent: false); throws on another value. */
export function postgresTarget(databaseUrl: string): PostgresTarget {
  const url = new URL(databaseUrl);
  const flag = url.searchParams.get(TRANSACTION_POOLER_PARAMETER);
  if (flag === null) return { connectionString: databaseUrl, transactionPooler: false };
  if (flag !== 'true' && flag !== 'false') {
    throw new Error(`${TRANSACTION_POOLER_PARAMETER}=${flag}: must be true (the URL goes through a transaction pooler) or false`);
  }
  url.searchParams.delete(TRANSACTION_POOLER_PARAMETER);
  return { connectionString: url.href, transactionPooler: flag === 'true' };
}

/** What a DATABASE_URL makes the service depend on, as an operator's log names it. */
export interface DatabaseDependency {
  /** A transaction pooler (`pgbouncer=true`) is named, not the PostgreSQL behind it: that is what the service reaches. */
  kind: 'sqlite' | 'postgresql' | 'pgbouncer';
  name: 'SQLite' | 'PostgreSQL' | 'PgBouncer';
  /** Where: the file, or host:port/database (never the user or password). */
  target: string;
}

export function databaseDependency(databaseUrl: string): DatabaseDependency {
  if (providerOf(databaseUrl) === 'sqlite') return { kind: 'sqlite', name: 'SQLite', target: sqliteFilePath(databaseUrl) };
  const url = new URL(databaseUrl);
  const target = `${url.hostname}:${url.port || '5432'}${url.pathname}`;
  return postgresTarget(databaseUrl).transactionPooler
    ? { kind: 'pgbouncer', name: 'PgBouncer', target }
    : { kind: 'postgresql', name: 'PostgreSQL', target };
}
