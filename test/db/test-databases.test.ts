// The harness's databases (test/support/test-database.ts), on both providers: a migrated test
// database is a copy of the run's template with every migration applied, and a database of its
// own (what one test writes, another never sees); an empty one is left for tests of migrating.
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { databaseNeedsMigration, openDatabase } from '../../src/db/database.js';
import { PROVIDERS } from '../../src/db/providers.js';
import { createPetRepository } from '../../src/db/sql.js';
import { createMigratedTestDatabase, createTestDatabase, type TestDatabase } from '../support/test-database.js';

const made: TestDatabase[] = [];
afterAll(() => Promise.all(made.map((database) => database.drop())));

describe.each(PROVIDERS)('test databases on %s', (provider) => {
  it('a migrated one needs no migration, an empty one does', async () => {
    const [migrated, empty] = await Promise.all([createMigratedTestDatabase(provider), createTestDatabase(provider)]);
    made.push(migrated, empty);
    expect(await databaseNeedsMigration(migrated.url)).toBe(false);
    expect(await databaseNeedsMigration(empty.url)).toBe(true);
  });

  it('each migrated one is a database of its own: what is written in one is in no other, made before or after', async () => {
    const open = async () => {
      const database = await createMigratedTestDatabase(provider);
      made.push(database);
      return openDatabase(parseConfig({ DATABASE_URL: database.url }));
    };
    const before = await open();
    const written = await open();
    try {
      await createPetRepository(written.sql).create({ name: 'Only here', categoryId: 1 });
      const after = await open();
      try {
        expect(await createPetRepository(written.sql).list({ limit: 10 })).toHaveLength(1);
        expect(await createPetRepository(before.sql).list({ limit: 10 })).toEqual([]);
        expect(await createPetRepository(after.sql).list({ limit: 10 })).toEqual([]);
      } finally {
        await after.close();
      }
    } finally {
      await Promise.all([before.close(), written.close()]);
    }
  });
});
