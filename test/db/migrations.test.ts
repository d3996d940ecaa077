// The migration tooling: migrations apply to a fresh database, a second run applies nothing, and
// `npm run db:migration -- <name>` writes the SQL for a schema change without any database.
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import Sqlite from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { applyMigrations, createMigration } from '../../src/db/migrations.js';
import { schemaLayout, type SchemaLayout } from '../../src/db/providers.js';

const dir = mkdtempSync(join(tmpdir(), 'animal-store-migrations-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('sqlite migrations', () => {
  it('apply to a fresh database, and a second run applies nothing', async () => {
    const file = join(dir, 'fresh.db');
    const applied = await applyMigrations(new PrismaBetterSqlite3({ url: file }), schemaLayout('sqlite'));
    expect(applied).toEqual(readdirSync(schemaLayout('sqlite').migrationsDir).filter((name) => /^\d+_/.test(name)).sort());
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

  it('db:migration writes nothing for an unchanged schema, and the SQL of a change otherwise', async () => {
    const copy: SchemaLayout = { provider: 'sqlite', schemaPath: join(dir, 'schema.prisma'), migrationsDir: join(dir, 'migrations') };
    cpSync(schemaLayout('sqlite').schemaPath, copy.schemaPath);
    cpSync(schemaLayout('sqlite').migrationsDir, copy.migrationsDir, { recursive: true });
    const memory = () => new PrismaBetterSqlite3({ url: ':memory:' });

    expect(await createMigration(memory(), copy, 'nothing')).toBeNull();

    const schema = readFileSync(copy.schemaPath, 'utf8').replace('  name       String\n', '  name       String\n  nickname   String?\n');
    writeFileSync(copy.schemaPath, schema);
    const written = await createMigration(memory(), copy, 'add_nickname', new Date('2099-01-01T00:00:00Z'));
    expect(written).toMatch(/20990101000000_add_nickname$/);
    expect(readFileSync(join(written!, 'migration.sql'), 'utf8')).toMatch(/ALTER TABLE "pets" ADD COLUMN "nickname" TEXT/);

    const file = join(dir, 'evolved.db');
    expect(await applyMigrations(new PrismaBetterSqlite3({ url: file }), copy)).toContain('20990101000000_add_nickname');
    expect(await createMigration(memory(), copy, 'again')).toBeNull();
  });
});
