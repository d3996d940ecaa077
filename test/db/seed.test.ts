// `npm run db:seed`: a sample inventory on whatever DATABASE_URL names, added once.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { migrateDatabase, openDatabase } from '../../src/db/database.js';
import { createPetRepository } from '../../src/db/sql.js';
import { SAMPLE_PETS } from '../../src/db/seed.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'animal-store-seed-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the script exactly as `npm run db:seed` does, on `databaseUrl`; rejects when it fails. */
async function seed(databaseUrl: string): Promise<string> {
  const { DATABASE_URL: _ignored, ...env } = process.env;
  const { stdout } = await promisify(execFile)(join(ROOT, 'node_modules', '.bin', 'tsx'), ['src/cli/seed.ts'], {
    cwd: ROOT,
    env: { ...env, DATABASE_URL: databaseUrl },
  });
  return stdout;
}

describe('npm run db:seed', { timeout: 60_000 }, () => {
  it('fills a new database with the sample inventory, and a second run adds nothing', async () => {
    const databaseUrl = `file:${join(dir, 'seeded.db')}`;
    await migrateDatabase(databaseUrl);
    expect(await seed(databaseUrl)).toMatch(`added ${SAMPLE_PETS.length} of ${SAMPLE_PETS.length}`);
    expect(await seed(databaseUrl)).toMatch(`added 0 of ${SAMPLE_PETS.length}`);

    const database = await openDatabase(parseConfig({ DATABASE_URL: databaseUrl }));
    try {
      const pets = await createPetRepository(database.sql).list({ limit: 100 });
      expect(pets.map(({ name, categoryId, status }) => ({ name, categoryId, status }))).toEqual(SAMPLE_PETS);
      expect(new Set(pets.map((pet) => pet.status))).toEqual(new Set(['available', 'pending', 'sold']));
    } finally {
      await database.close();
    }
  });

  it('migrates a database that never was, then seeds it (as npm start would)', async () => {
    const databaseUrl = `file:${join(dir, 'unmigrated.db')}`;
    expect(await seed(databaseUrl)).toMatch(`added ${SAMPLE_PETS.length} of ${SAMPLE_PETS.length}`);
  });
});
