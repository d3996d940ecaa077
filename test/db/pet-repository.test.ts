// The pet repository and the SQL it runs on (both in src/db/sql.ts), on both
// databases: one implementation, the same answers, the same transaction semantics, and the same
// rows that Prisma (which owns the models) reads and writes.
import { statSync } from 'node:fs';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/database.js';
import type { Provider } from '../../src/db/providers.js';
import { createPetRepository, statement } from '../../src/db/sql.js';
import { parseConfig } from '../../src/config.js';
import { createMigratedTestDatabase, type TestDatabase } from '../support/test-database.js';

let database: Database | undefined;
let testDatabase: TestDatabase | undefined;
afterEach(async () => {
  await database?.close();
  await testDatabase?.drop();
  database = undefined;
  testDatabase = undefined;
});

async function open(provider: Provider): Promise<Database> {
  testDatabase = await createMigratedTestDatabase(provider);
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

describe('PostgreSQL: how the statements run (src/db/sql.ts)', () => {
  it('each statement is prepared once per connection under its own name, and its rows read as arrays', async () => {
    testDatabase = await createMigratedTestDatabase('postgresql');
    // One connection, so every statement below runs on the one whose prepared statements are read.
    database = await openDatabase(parseConfig({ DATABASE_URL: testDatabase.url, DATABASE_POOL_SIZE: '1' }));
    const pets = createPetRepository(database.sql);
    const rex = await pets.create({ name: 'Rex', categoryId: 1 });
    for (let i = 0; i < 3; i++) expect(await pets.list({ limit: 5 })).toEqual([rex]);
    expect(await pets.list({ limit: 5, status: 'available' })).toEqual([rex]);
    expect(await pets.findById(rex.id)).toEqual(rex);
    const prepared = statement('test_prepared', 'SELECT name, statement FROM pg_prepared_statements ORDER BY name');
    const rows = await database.sql.query(prepared, []);
    expect(rows).toEqual([
      ['pets_by_id', 'SELECT id, name, category_id, status FROM pets WHERE id = $1'],
      ['pets_insert', expect.stringMatching(/^INSERT INTO pets .* RETURNING id, name, category_id, status$/)],
      ['pets_list', 'SELECT id, name, category_id, status FROM pets WHERE id > $1 ORDER BY id ASC LIMIT $2'],
      ['pets_list_by_status', expect.stringContaining('(status, id) > ($1, $2)')],
      ['test_prepared', 'SELECT name, statement FROM pg_prepared_statements ORDER BY name'],
    ]);
  });

  it("sends one turn's statements pipelined on one connection, each answered as pg's pool.query answers it alone", async () => {
    testDatabase = await createMigratedTestDatabase('postgresql');
    database = await openDatabase(parseConfig({ DATABASE_URL: testDatabase.url, DATABASE_POOL_SIZE: '2' }));
    const reference = new pg.Pool({ connectionString: testDatabase.url, max: 2 });
    const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
    try {
      await createPetRepository(database.sql).create({ name: 'Rex', categoryId: 1 });
      await nextTurn();
      const sql = 'SELECT name FROM pets WHERE id > ? ORDER BY id';
      const select = statement('test_lend_select', sql);
      const failing = statement('test_lend_failing', 'SELECT 1 / (id - id) FROM pets');
      const backend = statement('test_lend_backend', 'SELECT pg_backend_pid()');
      const stats = () => database!.poolStats()!;
      // The library's own path and ours, on the same work of one turn: more statements than connections, one failing.
      const theirs = async () => {
        const settled = await Promise.allSettled([
          ...Array.from({ length: 6 }, (_, i) => reference.query({ text: sql.replace('?', '$1'), values: [i - 1], rowMode: 'array' })),
          reference.query('SELECT 1 / (id - id) FROM pets'),
        ]);
        return settled.map((result) => (result.status === 'fulfilled' ? result.value.rows : (result.reason as pg.DatabaseError).code));
      };
      const ours = async () => {
        const settled = await Promise.allSettled([
          ...Array.from({ length: 6 }, (_, i) => database!.sql.query(select, [i - 1])),
          database!.sql.query(failing, []),
        ]);
        return settled.map((result) => (result.status === 'fulfilled' ? result.value : (result.reason as pg.DatabaseError).code));
      };
      const expected = await theirs();
      expect(expected).toEqual([[['Rex']], [['Rex']], [], [], [], [], '22012']);
      expect(stats()).toMatchObject({ total: 1, idle: 1 });
      expect(await ours()).toEqual(expected);
      await nextTurn();
      expect(stats()).toMatchObject({ total: 0 }); // the turn's one connection, closed after its failed statement

      // Each statement its own transaction: writes of the failing statement's turn are committed, as pool.query's.
      const pets = createPetRepository(database.sql);
      const writes = await Promise.allSettled([
        pets.create({ name: 'Ada', categoryId: 1 }),
        database.sql.query(failing, []),
        pets.create({ name: 'Bo', categoryId: 1 }),
      ]);
      expect(writes.map((write) => write.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      const committed = await reference.query("SELECT name FROM pets WHERE name IN ('Ada', 'Bo') ORDER BY name");
      expect(committed.rows).toEqual([{ name: 'Ada' }, { name: 'Bo' }]);

      // Five statements of one turn, one backend; of five turns, two (the pool's size) at most.
      const oneTurn = await Promise.all(Array.from({ length: 5 }, () => database!.sql.query(backend, [])));
      expect(new Set(oneTurn.flat(2)).size).toBe(1);
      const turns: Array<Promise<unknown[][]>> = [];
      for (let i = 0; i < 5; i++) {
        turns.push(database.sql.query(backend, []));
        await nextTurn();
      }
      expect(new Set((await Promise.all(turns)).flat(2)).size).toBeLessThanOrEqual(2);
      await nextTurn();

      // A connection stays out until the turn its statements settled in ends, then goes to a batch waiting for it.
      await database.sql.query(select, [0]);
      const out = stats().idle;
      await nextTurn();
      await nextTurn();
      expect(stats().idle).toBe(out + 1);
      const [first, second, third] = [0, 1, 2].map(() => database!.sql.query(select, [0]));
      expect(await Promise.all([first, second, third])).toEqual(Array(3).fill([['Rex'], ['Ada'], ['Bo']]));
      expect(stats()).toMatchObject({ total: 2, waiting: 0 });
    } finally {
      await reference.end();
    }
  });
});

describe('SQLite: the service’s own better-sqlite3 connections beside Prisma’s adapter connection', () => {
  /** Another connection to the test database's file, as another process would open it; it never waits for a lock. */
  async function otherConnection() {
    const Sqlite = (await import('better-sqlite3')).default;
    return new Sqlite(testDatabase!.url.slice('file:'.length), { timeout: 0 });
  }

  it('see each other’s commits at once, both ways, with the same rows and values', async () => {
    const db = await open('sqlite');
    const pets = createPetRepository(db.sql);
    // Prisma writes, our connection reads; ours writes, Prisma reads; a transaction (the other
    // connection of ours) writes, both read. The same rows every way, with no pause between.
    const viaPrisma = await db.prisma.pet.create({ data: { name: 'Prisma', categoryId: 4n, status: 'sold' } });
    expect(await pets.findById(Number(viaPrisma.id))).toEqual({ id: Number(viaPrisma.id), name: 'Prisma', categoryId: 4, status: 'sold' });
    const viaHandle = await pets.create({ name: 'Handle', categoryId: Number.MAX_SAFE_INTEGER });
    expect(await db.prisma.pet.findUnique({ where: { id: viaHandle.id } })).toMatchObject({ name: 'Handle', status: 'available' });
    const viaTransaction = await db.sql.transaction((session) => createPetRepository(session).create({ name: 'Tx', categoryId: 6 }));
    expect(await pets.findById(viaTransaction.id)).toEqual(viaTransaction);
    const prismaRows = (await db.prisma.pet.findMany({ orderBy: { id: 'asc' } })).map((row) => ({
      ...row,
      id: Number(row.id),
      categoryId: Number(row.categoryId),
    }));
    expect(await pets.list({ limit: 10 })).toEqual(prismaRows);
    expect(prismaRows.map((row) => row.id)).toEqual([Number(viaPrisma.id), viaHandle.id, viaTransaction.id]);
  });

  it('a Prisma transaction open on its own connection never takes in our statements, and we wait for its lock', async () => {
    const db = await open('sqlite');
    const pets = createPetRepository(db.sql);
    let ours: Promise<unknown> | undefined;
    await expect(
      db.prisma.$transaction(async (tx) => {
        await tx.pet.create({ data: { name: 'in-prisma-tx', categoryId: 1n, status: 'available' } });
        // Prisma's transaction holds the write lock now: our create waits for it (asynchronously).
        ours = pets.create({ name: 'ours', categoryId: 1 });
        await new Promise((resolve) => setTimeout(resolve, 50));
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await ours;
    expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['ours']);
  });

  it('writes arriving in one turn are committed together: one commit’s WAL frames instead of one commit each', async () => {
    const db = await open('sqlite');
    const pets = createPetRepository(db.sql);
    db.sqlite!.pragma('wal_autocheckpoint = 0'); // the WAL file only grows, so its growth counts what commits wrote
    const wal = `${testDatabase!.url.slice('file:'.length)}-wal`;
    const before = statSync(wal).size;
    const together = await Promise.all(Array.from({ length: 20 }, (_, i) => pets.create({ name: `together-${i}`, categoryId: 1 })));
    const afterTogether = statSync(wal).size;
    for (let i = 0; i < 20; i++) await pets.create({ name: `alone-${i}`, categoryId: 1 });
    const afterAlone = statSync(wal).size;
    expect(new Set(together.map((pet) => pet.id)).size).toBe(20);
    expect((await pets.list({ limit: 100 })).length).toBe(40);
    expect((afterTogether - before) * 5).toBeLessThan(afterAlone - afterTogether);
  });

  it('in a group commit a failed statement fails alone, and one that ends the transaction fails every write in it', async () => {
    const db = await open('sqlite');
    const pets = createPetRepository(db.sql);
    // Per connection (TEMP): ABORT undoes its statement, ROLLBACK the whole transaction.
    db.sqlite!.exec(`CREATE TEMP TRIGGER refuse BEFORE INSERT ON pets WHEN NEW.name = 'refused' BEGIN SELECT RAISE(ABORT, 'refused'); END;
      CREATE TEMP TRIGGER doom BEFORE INSERT ON pets WHEN NEW.name = 'doom' BEGIN SELECT RAISE(ROLLBACK, 'doom'); END;`);
    const names = (settled: PromiseSettledResult<unknown>[]) => settled.map((result) => result.status);
    const first = await Promise.allSettled(['a', 'refused', 'b'].map((name) => pets.create({ name, categoryId: 1 })));
    expect(names(first)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['a', 'b']);

    const second = await Promise.allSettled(['c', 'doom', 'd'].map((name) => pets.create({ name, categoryId: 1 })));
    expect(names(second)).toEqual(['rejected', 'rejected', 'rejected']);
    expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['a', 'b']);
    // The connection is out of the transaction and serves the next turn's writes.
    expect(db.sqlite!.inTransaction).toBe(false);
    await Promise.all(['e', 'f'].map((name) => pets.create({ name, categoryId: 1 })));
    expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['a', 'b', 'e', 'f']);
  });

  it('reads arriving in one turn run in one read transaction, ended before any is answered; a lone read in autocommit', async () => {
    const db = await open('sqlite');
    const pets = createPetRepository(db.sql);
    // Run inside a statement, it tells whether the connection is in a transaction (autocommit off).
    db.sqlite!.function('in_transaction', () => (db.sqlite!.inTransaction ? 1 : 0));
    const probe = statement('probe_transaction', 'SELECT in_transaction()');
    const overflow = statement('probe_overflow', 'SELECT abs(?)');
    const rex = await pets.create({ name: 'Rex', categoryId: 1 });

    const together = await Promise.allSettled([
      db.sql.query(probe, []),
      pets.findById(rex.id),
      db.sql.query(overflow, [-9223372036854775808n]), // fails as it runs: integer overflow
      pets.list({ limit: 10 }),
      db.sql.query(probe, []),
    ]);
    expect(together.map((result) => (result.status === 'fulfilled' ? result.value : String(result.reason)))).toEqual([
      [[1]],
      rex,
      expect.stringContaining('integer overflow'),
      [rex],
      [[1]],
    ]);
    expect(db.sqlite!.inTransaction).toBe(false);
    expect(await db.sql.query(probe, [])).toEqual([[0]]);
  });

  it('a read runs after it was asked: it sees what another connection committed before the turn ended', async () => {
    const db = await open('sqlite');
    const pets = createPetRepository(db.sql);
    const other = await otherConnection();
    try {
      const first = pets.list({ limit: 10 });
      const second = pets.list({ limit: 10, status: 'sold' });
      other.prepare("INSERT INTO pets (name, category_id, status) VALUES ('late', 1, 'sold')").run();
      const [all, sold] = await Promise.all([first, second]);
      expect(all.map((pet) => pet.name)).toEqual(['late']);
      expect(sold.map((pet) => pet.name)).toEqual(['late']);
      // Reads and writes of one turn together: the writes answered once committed, every read answered.
      const mixed = await Promise.all([
        pets.create({ name: 'a', categoryId: 1 }),
        pets.list({ limit: 10 }),
        pets.create({ name: 'b', categoryId: 1 }),
      ]);
      expect(mixed[1].map((pet) => pet.name)[0]).toBe('late');
      expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['late', 'a', 'b']);
    } finally {
      other.close();
    }
  });

  it('a group commit waits for a write lock held elsewhere while reads go on, and answers once committed', async () => {
    const db = await open('sqlite');
    const pets = createPetRepository(db.sql);
    const other = await otherConnection();
    try {
      other.exec('BEGIN IMMEDIATE');
      let answered = 0;
      const writes = ['x', 'y', 'z'].map((name) => pets.create({ name, categoryId: 1 }).then((pet) => (answered++, pet)));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(answered).toBe(0);
      expect(await pets.list({ limit: 10 })).toEqual([]);
      other.exec('COMMIT');
      expect((await Promise.all(writes)).map((pet) => pet.name)).toEqual(['x', 'y', 'z']);
      expect(other.prepare('SELECT count(*) AS n FROM pets').get()).toEqual({ n: 3 });
    } finally {
      other.close();
    }
  });

  it('closes every connection it opened', async () => {
    const db = await open('sqlite');
    await db.prisma.pet.count(); // Prisma's connection opens at its first query
    const ours = db.sqlite!;
    await db.close();
    database = undefined;
    expect(ours.open).toBe(false);
    // Nothing holds the file: an exclusive lock is granted at once.
    const other = await otherConnection();
    try {
      other.pragma('locking_mode = EXCLUSIVE');
      expect(() => other.exec('BEGIN EXCLUSIVE; COMMIT')).not.toThrow();
    } finally {
      other.close();
    }
  });
});
