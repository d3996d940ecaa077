// Applies and writes the migration folders in prisma/<provider>/migrations, in `prisma migrate`'s
// layout. Each keeps its schema.prisma, so the next migration is a diff needing no shadow database.
// @see docs/development.md "Migrations and the two providers"
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { setTimeout } from 'node:timers/promises';
import { join } from 'node:path';
import type { SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import { openSchemaEngine } from './schema-engine.js';
import type { SchemaLayout } from './providers.js';

const LOCKFILE = 'migration_lock.toml';
const MIGRATION_FILE = 'migration.sql';
const SCHEMA_SNAPSHOT = 'schema.prisma';
const NO_FILTERS = { externalTables: [], externalEnums: [] };

async function migrationFolderNames(migrationsDir: string): Promise<string[]> {
  if (!existsSync(migrationsDir)) return [];
  const entries = await readdir(migrationsDir, { withFileTypes: true });
  return entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

async function readMigrationList(layout: SchemaLayout) {
  const names = await migrationFolderNames(layout.migrationsDir);
  const lockPath = join(layout.migrationsDir, LOCKFILE);
  return {
    baseDir: layout.migrationsDir,
    lockfile: {
      path: LOCKFILE,
      content: existsSync(lockPath) ? await readFile(lockPath, 'utf8') : null,
    },
    shadowDbInitScript: '',
    migrationDirectories: await Promise.all(
      names.map(async (name) => ({
        path: name,
        migrationFile: {
          path: MIGRATION_FILE,
          content: {
            tag: 'ok' as const,
            value: await readFile(join(layout.migrationsDir, name, MIGRATION_FILE), 'utf8'),
          },
        },
      })),
    ),
  };
}

async function recordedMigrations(adapterFactory: SqlMigrationAwareDriverAdapterFactory): Promise<Set<string> | null> {
  const connection = await adapterFactory.connect();
  try {
    const result = await connection.queryRaw({
      sql: 'SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
      args: [],
      argTypes: [],
    });
    return new Set(result.rows.map((row) => String(row[0])));
  } catch {
    return null;
  } finally {
    await connection.dispose();
  }
}

/** Whether a migration is unrecorded: a plain query, without the schema engine. */
export async function migrationsPending(adapterFactory: SqlMigrationAwareDriverAdapterFactory, layout: SchemaLayout): Promise<boolean> {
  const folders = await migrationFolderNames(layout.migrationsDir);
  const recorded = await recordedMigrations(adapterFactory);
  return !recorded || !folders.every((name) => recorded.has(name));
}

/**
 * Applies every migration not yet in `_prisma_migrations`; returns their names. The engine starts only
 * when something is pending: on SQLite it takes an exclusive lock other processes would fail.
 */
export async function applyMigrations(adapterFactory: SqlMigrationAwareDriverAdapterFactory, layout: SchemaLayout): Promise<string[]> {
  const schema = { path: layout.schemaPath, content: await readFile(layout.schemaPath, 'utf8') };
  for (let attempt = 1; ; attempt++) {
    if (!(await migrationsPending(adapterFactory, layout))) return [];
    try {
      const { engine, close } = await openSchemaEngine(adapterFactory, schema);
      try {
        const { appliedMigrationNames } = await engine.applyMigrations({
          migrationsList: await readMigrationList(layout),
          filters: NO_FILTERS,
        });
        return appliedMigrationNames;
      } finally {
        await close();
      }
    } catch (error) {
      // Two instances on a fresh file: one migrates, the other waits for it.
      if (attempt >= MIGRATION_LOCK_ATTEMPTS || !isLockedBySomeoneElse(error)) throw error;
      await setTimeout(MIGRATION_LOCK_WAIT_MS);
    }
  }
}

const MIGRATION_LOCK_ATTEMPTS = 50;
const MIGRATION_LOCK_WAIT_MS = 200;

/** The adapter reports SQLite's busy lock as `SocketTimeout`. */
function isLockedBySomeoneElse(error: unknown): boolean {
  return error instanceof Error && /SocketTimeout|database is locked/.test(error.message);
}

/** Writes the next migration.sql, or returns null when the schema has not changed. Needs no database. */
export async function createMigration(
  adapterFactory: SqlMigrationAwareDriverAdapterFactory,
  layout: SchemaLayout,
  name: string,
  now = new Date(),
): Promise<string | null> {
  const current = { path: layout.schemaPath, content: await readFile(layout.schemaPath, 'utf8') };
  const previousNames = await migrationFolderNames(layout.migrationsDir);
  const latest = previousNames.at(-1);
  const from = latest
    ? {
        tag: 'schemaDatamodel' as const,
        files: [
          {
            path: join(layout.migrationsDir, latest, SCHEMA_SNAPSHOT),
            content: await readFile(join(layout.migrationsDir, latest, SCHEMA_SNAPSHOT), 'utf8'),
          },
        ],
      }
    : { tag: 'empty' as const };

  const { engine, close } = await openSchemaEngine(adapterFactory, current);
  let sql: string;
  try {
    const result = await engine.diff({
      from,
      to: { tag: 'schemaDatamodel', files: [current] },
      script: true,
      exitCode: null,
      filters: NO_FILTERS,
    });
    sql = result.stdout ?? '';
  } finally {
    await close();
  }
  if (sql.trim() === '' || /^-- This is an empty migration\.\s*$/.test(sql.trim())) return null;

  const folder = `${timestamp(now)}_${name}`;
  const dir = join(layout.migrationsDir, folder);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, MIGRATION_FILE), sql);
  await writeFile(join(dir, SCHEMA_SNAPSHOT), current.content);
  const lockPath = join(layout.migrationsDir, LOCKFILE);
  if (!existsSync(lockPath)) {
    await writeFile(
      lockPath,
      `# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "${layout.provider}"\n`,
    );
  }
  return dir;
}

function timestamp(date: Date): string {
  return date.toISOString().replace(/\D/g, '').slice(0, 14);
}
