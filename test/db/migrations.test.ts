// The migration tooling, on both providers: the provider schemas are the one data model, fresh
// databases migrate to the same API, a second run applies nothing, and `npm run db:migration`
// writes each provider's SQL for a schema change without any database.
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import Sqlite from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { databaseNeedsMigration, migrateDatabase, openDatabase } from '../../src/db/database.js';
import { migrateInChildProcess } from '../../src/db/migrate-in-child.js';
import { applyMigrations, createMigration } from '../../src/db/migrations.js';
import { offlineDiffAdapter } from '../../src/db/offline-diff-adapters.js';
import { renderProviderSchema } from '../../src/db/provider-schemas.js';
import { MODELS_PATH, PROVIDERS, schemaLayout, type Provider, type SchemaLayout } from '../../src/db/providers.js';
import { createPetRepository } from '../../src/db/sql.js';
import { createTestDatabase } from '../support/test-database.js';

const dir = mkdtempSync(join(tmpdir(), 'animal-store-migrations-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const migrationNames = (provider: Provider) =>
  readdirSync(schemaLayout(provider).migrationsDir)
    .filter((name) => /^\d+_/.test(name))
    .sort();

/** A copy of a provider's schema and migrations, for tests that change them. */
function copyOfLayout(provider: Provider): SchemaLayout {
  const copy: SchemaLayout = {
    provider,
    schemaPath: join(dir, provider, 'schema.prisma'),
    migrationsDir: join(dir, provider, 'migrations'),
  };
  cpSync(schemaLayout(provider).schemaPath, copy.schemaPath);
  cpSync(schemaLayout(provider).migrationsDir, copy.migrationsDir, { recursive: true });
  return copy;
}

describe('one data model for both providers', () => {
  it.each(PROVIDERS)(
    'prisma/%s/schema.prisma is written from prisma/models.prisma (run `npm run db:migration -- <name>` after editing it)',
    (provider) => {
      const models = readFileSync(MODELS_PATH, 'utf8');
      expect(readFileSync(schemaLayout(provider).schemaPath, 'utf8')).toBe(renderProviderSchema(provider, models));
    },
  );

  it.each(PROVIDERS)('the %s migrations are up to date with the schema (no change waits for a migration)', async (provider) => {
    expect(await createMigration(offlineDiffAdapter(provider), copyOfLayout(provider), 'pending')).toBeNull();
  });

  it('both providers have the same migrations, by name', () => {
    expect(migrationNames('postgresql')).toEqual(migrationNames('sqlite'));
  });
});

describe("npm start's migration step, in a child process", () => {
  it('a fresh SQLite file: the child applies them all and answers their names; then nothing is pending', async () => {
    const url = `file:${join(dir, 'child.db')}`;
    expect(await databaseNeedsMigration(url)).toBe(true);
    expect(await migrateInChildProcess(url)).toEqual(migrationNames('sqlite'));
    expect(await databaseNeedsMigration(url)).toBe(false);
    expect(await migrateInChildProcess(url)).toEqual([]);
    const db = new Sqlite(join(dir, 'child.db'), { readonly: true });
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'pets'").all();
    db.close();
    expect(tables).toEqual([{ name: 'pets' }]);
  });

  it("the child's error is thrown in the parent with its message (a failed migration recorded: Prisma's P3009)", async () => {
    const file = join(dir, 'failed.db');
    await migrateDatabase(`file:${file}`);
    const db = new Sqlite(file);
    db.prepare('UPDATE _prisma_migrations SET finished_at = NULL WHERE migration_name = ?').run(migrationNames('sqlite').at(-1));
    db.close();
    await expect(migrateInChildProcess(`file:${file}`)).rejects.toThrow(/failed migrations in the target database/);
  });
});

describe('applying the migrations', () => {
  it('a fresh SQLite file: all apply, a second run applies nothing, the table is as designed', async () => {
    const file = join(dir, 'fresh.db');
    const applied = await applyMigrations(new PrismaBetterSqlite3({ url: file }), schemaLayout('sqlite'));
    expect(applied).toEqual(migrationNames('sqlite'));
    expect(await applyMigrations(new PrismaBetterSqlite3({ url: file }), schemaLayout('sqlite'))).toEqual([]);

    const db = new Sqlite(file, { readonly: true });
    const columns = db.prepare("SELECT name, type FROM pragma_table_info('pets')").all();
    const recorded = db.prepare('SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL').all();
    db.close();
    expect(columns).toEqual([
      { name: 'id', type: 'INTEGER' },
      { name: 'name', type: 'TEXT' },
      { name: 'category_id', type: 'BIGINT' },
      { name: 'status', type: 'TEXT' },
    ]);
    expect(recorded).toHaveLength(applied.length);
  });

  it('a fresh PostgreSQL database: all apply, a second run applies nothing, ids are BIGSERIAL', async () => {
    const database = await createTestDatabase('postgresql');
    try {
      expect(await migrateDatabase(database.url)).toEqual(migrationNames('postgresql'));
      expect(await migrateDatabase(database.url)).toEqual([]);

      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        const columns = await client.query(
          `SELECT column_name AS name, data_type AS type, column_default AS "default" FROM information_schema.columns
           WHERE table_name = 'pets' ORDER BY ordinal_position`,
        );
        expect(columns.rows).toEqual([
          { name: 'id', type: 'bigint', default: "nextval('pets_id_seq'::regclass)" },
          { name: 'name', type: 'text', default: null },
          { name: 'category_id', type: 'bigint', default: null },
          { name: 'status', type: 'USER-DEFINED', default: '\'available\'::"PetStatus"' },
        ]);
        const recorded = await client.query('SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL');
        expect(recorded.rowCount).toBe(migrationNames('postgresql').length);
      } finally {
        await client.end();
      }
    } finally {
      await database.drop();
    }
  });

  it('fresh databases of each kind serve the same API: the same pets, ids, defaults and order', async () => {
    const answers = [];
    for (const provider of PROVIDERS) {
      const testDatabase = await createTestDatabase(provider);
      await migrateDatabase(testDatabase.url);
      const database = await openDatabase(parseConfig({ DATABASE_URL: testDatabase.url }));
      try {
        const pets = createPetRepository(database.sql);
        await pets.create({ name: 'Rex', categoryId: Number.MAX_SAFE_INTEGER });
        await pets.create({ name: 'Tom', categoryId: 2, status: 'sold' });
        answers.push({
          list: await pets.list({ limit: 10 }),
          sold: await pets.list({ limit: 10, status: 'sold' }),
          first: await pets.findById(1),
          missing: await pets.findById(3),
        });
      } finally {
        await database.close();
        await testDatabase.drop();
      }
    }
    expect(answers[0]).toEqual({
      list: [
        { id: 1, name: 'Rex', categoryId: Number.MAX_SAFE_INTEGER, status: 'available' },
        { id: 2, name: 'Tom', categoryId: 2, status: 'sold' },
      ],
      sold: [{ id: 2, name: 'Tom', categoryId: 2, status: 'sold' }],
      first: { id: 1, name: 'Rex', categoryId: Number.MAX_SAFE_INTEGER, status: 'available' },
      missing: null,
    });
    expect(answers[1]).toEqual(answers[0]);
  });
});

describe('npm run db:migration', () => {
  it.each([
    ['sqlite', /ALTER TABLE "pets" ADD COLUMN "nickname" TEXT/],
    ['postgresql', /ALTER TABLE "pets" ADD COLUMN\s+"nickname" TEXT/],
  ] as const)('%s: writes nothing for an unchanged schema, and the SQL of a change with no database', async (provider, expected) => {
    const copy = copyOfLayout(provider);
    expect(await createMigration(offlineDiffAdapter(provider), copy, 'nothing')).toBeNull();

    const schema = readFileSync(copy.schemaPath, 'utf8').replace('  name       String\n', '  name       String\n  nickname   String?\n');
    writeFileSync(copy.schemaPath, schema);
    const written = await createMigration(offlineDiffAdapter(provider), copy, 'add_nickname', new Date('2099-01-01T00:00:00Z'));
    expect(written).toMatch(/20990101000000_add_nickname$/);
    expect(readFileSync(join(written!, 'migration.sql'), 'utf8')).toMatch(expected);
    expect(await createMigration(offlineDiffAdapter(provider), copy, 'again')).toBeNull();

    // And the written migration applies to a fresh database of that kind.
    const database = await createTestDatabase(provider);
    try {
      const adapter =
        provider === 'sqlite'
          ? new PrismaBetterSqlite3({ url: database.url.slice('file:'.length) })
          : new PrismaPg({ connectionString: database.url });
      expect(await applyMigrations(adapter, copy)).toContain('20990101000000_add_nickname');
    } finally {
      await database.drop();
    }
  });
});
