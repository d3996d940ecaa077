// The pet repository and the SQL it runs on (src/pets/pet-repository.ts, src/db/sql.ts), on both
// databases: one implementation, the same answers, the same transaction semantics, and the same
// rows that Prisma (which owns the models) reads and writes.
import { afterEach, describe, expect, it } from 'vitest';
import { migrateDatabase, openDatabase, type Database } from '../../src/db/database.js';
import type { Provider } from '../../src/db/providers.js';
import { statement } from '../../src/db/sql.js';
import { createPetRepository } from '../../src/pets/pet-repository.js';
import { parseConfig } from '../../src/config.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let database: Database | undefined;
let testDatabase: TestDatabase | undefined;
afterEach(async () => {
  await database?.close();
  await testDatabase?.drop();
  database = undefined;
  testDatabase = undefined;
});

async function open(provider: Provider): Promise<Database> {
  testDatabase = await createTestDatabase(provider);
  await migrateDatabase(testDatabase.url);
  database = await openDatabase(parseConfig({ DATABASE_URL: testDatabase.url }));
  return database;
}

describe.each(['sqlite', 'postgresql'] as const)('on %s', (provider) => {
  it('creates, finds and lists pets; Prisma sees the same rows', async () => {
    const db = await open(provider);
    const pets = createPetRepository(db.sql);
    const rex = await pets.create({ name: 'Rex', categoryId: Number.MAX_SAFE_INTEGER });
    const tom = await pets.create({ name: 'Tom', categoryId: 2, status: 'sold' });
    expect(rex).toEqual({ id: expect.any(Number), name: 'Rex', categoryId: Number.MAX_SAFE_INTEGER, status: 'available' });
    expect(tom.id).toBeGreaterThan(rex.id);
    expect(await pets.findById(rex.id)).toEqual(rex);
    expect(await pets.findById(tom.id + 1000)).toBeNull();
    expect(await pets.list({ limit: 10 })).toEqual([rex, tom]);
    expect(await pets.list({ limit: 10, status: 'sold' })).toEqual([tom]);
    expect(await pets.list({ limit: 10, after: rex.id })).toEqual([tom]);
    expect(await pets.list({ limit: 10, status: 'available', after: rex.id })).toEqual([]);
    expect(await pets.list({ limit: 1 })).toEqual([rex]);

    const rows = await db.prisma.pet.findMany({ orderBy: { id: 'asc' } });
    expect(rows.map((row) => ({ ...row, id: Number(row.id), categoryId: Number(row.categoryId) }))).toEqual([rex, tom]);
    const viaPrisma = await db.prisma.pet.create({ data: { name: 'Kit', categoryId: 3n, status: 'pending' } });
    expect(await pets.findById(Number(viaPrisma.id))).toEqual({ id: Number(viaPrisma.id), name: 'Kit', categoryId: 3, status: 'pending' });
  });

  it('a create inside a transaction is there once committed, and gone when it rolls back', async () => {
    const db = await open(provider);
    const pets = createPetRepository(db.sql);
    const kept = await db.sql.transaction((session) => createPetRepository(session).create({ name: 'Kept', categoryId: 1 }));
    expect(await pets.findById(kept.id)).toEqual(kept);

    let inside: number | undefined;
    await expect(
      db.sql.transaction(async (session) => {
        inside = (await createPetRepository(session).create({ name: 'Lost', categoryId: 1 })).id;
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(inside).toBeGreaterThan(kept.id);
    expect(await pets.findById(inside!)).toBeNull();
    expect(await db.prisma.pet.count()).toBe(1);
  });

  it('statements outside a transaction never land inside an open one (its rollback keeps them)', async () => {
    const db = await open(provider);
    const pets = createPetRepository(db.sql);
    // Plain creates racing transactions that create and then roll back. On PostgreSQL each
    // transaction also waits on a timer while open, so the plain creates certainly run meanwhile
    // (on other pooled connections). On SQLite a transaction holds the write lock, so its work
    // runs statements only, with no I/O between them (src/db/sql.ts): nothing can run meanwhile.
    const pause = () => (provider === 'postgresql' ? new Promise((resolve) => setTimeout(resolve, 20)) : Promise.resolve());
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        i % 2
          ? pets.create({ name: `plain-${i}`, categoryId: 1 })
          : db.sql.transaction(async (session) => {
              await createPetRepository(session).create({ name: `rolled-back-${i}`, categoryId: 1 });
              await pause();
              throw new Error('roll back');
            }),
      ),
    );
    expect(results.map((result) => result.status)).toEqual(Array.from({ length: 20 }, (_, i) => (i % 2 ? 'fulfilled' : 'rejected')));
    const names = (await pets.list({ limit: 100 })).map((pet) => pet.name).sort();
    expect(names).toEqual(Array.from({ length: 10 }, (_, i) => `plain-${2 * i + 1}`).sort());
  });

  it('transactions take turns and each commits its own work', async () => {
    const db = await open(provider);
    const created = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        db.sql.transaction((session) => createPetRepository(session).create({ name: `t-${i}`, categoryId: 1 })),
      ),
    );
    expect(new Set(created.map((pet) => pet.id)).size).toBe(20);
    expect(await db.prisma.pet.count()).toBe(20);
  });

  it('reports its connection pool on PostgreSQL (for metrics), nothing on SQLite', async () => {
    const db = await open(provider);
    await createPetRepository(db.sql).list({ limit: 1 });
    if (provider === 'sqlite') {
      expect(db.poolStats()).toBeNull();
      return;
    }
    const stats = db.poolStats()!;
    expect(stats.max).toBe(10);
    expect(stats.total).toBeGreaterThanOrEqual(1);
    expect(stats.idle).toBeLessThanOrEqual(stats.total);
    expect(stats.waiting).toBe(0);
  });

  it('a unique-index violation is recognised as one, and a failed statement rejects', async () => {
    const db = await open(provider);
    const insertKey = statement('test_insert_key', 'INSERT INTO api_keys (name, hash) VALUES (?, ?)');
    await db.sql.query(insertKey, ['one', 'hash-1']);
    const duplicate = await db.sql.query(insertKey, ['one', 'hash-2']).then(
      () => null,
      (error: unknown) => error,
    );
    expect(duplicate).toBeInstanceOf(Error);
    expect(db.sql.isUniqueViolation(duplicate)).toBe(true);
    const broken = await db.sql.query(statement('test_broken', 'SELECT nothing FROM nowhere'), []).then(
      () => null,
      (error: unknown) => error,
    );
    expect(broken).toBeInstanceOf(Error);
    expect(db.sql.isUniqueViolation(broken)).toBe(false);
    // The connection still serves.
    expect(await createPetRepository(db.sql).list({ limit: 1 })).toEqual([]);
  });
});

describe('the better-sqlite3 handle beneath Prisma’s SQLite adapter (src/db/sqlite-adapter-internals.ts)', () => {
  it('is the very connection Prisma runs on: each sees what the other wrote, at once and alike', async () => {
    const db = await open('sqlite');
    expect(db.sqlite?.open).toBe(true);
    const pets = createPetRepository(db.sql);
    // Prisma writes, the handle reads; the handle writes, Prisma reads: the same rows both ways.
    const viaPrisma = await db.prisma.pet.create({ data: { name: 'Prisma', categoryId: 4n, status: 'sold' } });
    const viaHandle = await pets.create({ name: 'Handle', categoryId: 5 });
    const prismaRows = (await db.prisma.pet.findMany({ orderBy: { id: 'asc' } })).map((row) => ({
      ...row,
      id: Number(row.id),
      categoryId: Number(row.categoryId),
    }));
    expect(await pets.list({ limit: 10 })).toEqual(prismaRows);
    expect(prismaRows.map((row) => row.id)).toEqual([Number(viaPrisma.id), viaHandle.id]);
    // The connection settings applied through the adapter are the handle's.
    expect(db.sqlite!.pragma('journal_mode', { simple: true })).toBe('wal');
  });
});
