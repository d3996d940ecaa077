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
