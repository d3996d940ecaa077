// Which database a DATABASE_URL names, and where that provider's schema and migrations live.
import { fileURLToPath } from 'node:url';
import { isAbsolute, join, resolve } from 'node:path';

export const PROVIDERS = ['sqlite', 'postgresql'] as const;
export type Provider = (typeof PROVIDERS)[number];

export interface SchemaLayout {
  provider: Provider;
  schemaPath: string;
  migrationsDir: string;
}

/** The repository root, from src/db or dist/db. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export const MODELS_PATH = join(PROJECT_ROOT, 'prisma', 'models.prisma');

export function schemaLayout(provider: Provider): SchemaLayout {
  const dir = join(PROJECT_ROOT, 'prisma', provider);
  return { provider, schemaPath: join(dir, 'schema.prisma'), migrationsDir: join(dir, 'migrations') };
}

export function providerOf(databaseUrl: string): Provider | undefined {
  if (databaseUrl.startsWith('file:')) return 'sqlite';
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) return 'postgresql';
  return undefined;
}

/** Relative paths are from the working directory (the repository root under npm scripts). */
export function sqliteFilePath(databaseUrl: string, cwd = process.cwd()): string {
  let path = databaseUrl.slice('file:'.length);
  if (path.startsWith('//')) path = fileURLToPath(databaseUrl); // file:///abs/path.db
  const withoutQuery = path.split('?')[0] ?? path;
  return isAbsolute(withoutQuery) ? withoutQuery : resolve(cwd, withoutQuery);
}

/** Prisma's convention for a transaction pooler: `?pgbouncer=true`. */
const TRANSACTION_POOLER_PARAMETER = 'pgbouncer';

export interface PostgresTarget {
  connectionString: string;
  /** Nothing may rely on session state (named statements, SET, advisory locks, startup parameters). */
  transactionPooler: boolean;
}

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

export interface DatabaseDependency {
  kind: 'sqlite' | 'postgresql' | 'pgbouncer';
  name: 'SQLite' | 'PostgreSQL' | 'PgBouncer';
  /** Never the user or password. */
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
