// What docs/reliability.md promises about storage faults, checked piece by piece: which database
// errors count as a full disk (and which as an unannounced transaction pooler), how long /readyz
// remembers one, and the SQLite settings that bound the WAL file. (test/reliability/disk-full.test.ts
// shows the whole on a real full disk, SQLite; test/pgbouncer/ the pooler through a real PgBouncer.)
import { PrismaClientKnownRequestError } from '@prisma/client/runtime/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { databaseFault, RETRY_AFTER_SECONDS } from '../../src/db/database-errors.js';
import { openDatabase, type Database } from '../../src/db/database.js';
import { StorageHealth } from '../../src/db/storage-health.js';
import { createMigratedTestDatabase, type TestDatabase } from '../support/test-database.js';

/** A PostgreSQL server error with this SQLSTATE (and message), in each shape it reaches the service. */
function postgresErrors(sqlState: string, message = 'server error'): Array<[string, unknown]> {
  // pg's own, for statements run on the pool (src/db/sql.ts).
  const direct = Object.assign(new pg.DatabaseError(message, 0, 'error'), { code: sqlState });
  // adapter-pg's, as thrown by the adapter, and as Prisma's client wraps it for a query.
  const cause = { kind: 'postgres', originalCode: sqlState, originalMessage: message };
  const adapter = Object.assign(new Error(message), { name: 'DriverAdapterError', cause });
  const prisma = new PrismaClientKnownRequestError(message, {
    code: 'P2010',
    clientVersion: 'test',
    meta: { driverAdapterError: { cause } },
  });
  return [
    ['pg', direct],
    ['driver adapter', adapter],
    ['Prisma client', prisma],
  ];
}

describe('PostgreSQL errors that mean a full disk', () => {
  it.each([
    ['53100', 'disk full'],
    ['58030', 'I/O error'],
  ])('SQLSTATE %s (%s) is a storage fault in every shape', (sqlState) => {
    for (const [shape, error] of postgresErrors(sqlState)) expect(databaseFault(error), shape).toBe('storage');
  });

  it('the rest of class 53 is unavailability, and a wrong query is no fault at all', () => {
    for (const [shape, error] of postgresErrors('53300')) expect(databaseFault(error), shape).toBe('unavailable');
    for (const [shape, error] of postgresErrors('23505')) expect(databaseFault(error), shape).toBeNull();
  });
});

describe('PostgreSQL errors that mean a transaction pooler DATABASE_URL does not name (no pgbouncer=true)', () => {
  it.each([
    ['26000', 'prepared statement "pets_get" does not exist'],
    ['42P05', 'prepared statement "pets_get" already exists'],
    ['08P01', 'unsupported startup parameter: statement_timeout'],
  ])('SQLSTATE %s (%s) is a configuration fault in every shape, answered 503 with Retry-After', (sqlState, message) => {
    for (const [shape, error] of postgresErrors(sqlState, message)) expect(databaseFault(error), shape).toBe('configuration');
    expect(RETRY_AFTER_SECONDS.configuration).toBeGreaterThan(0);
  });

  it('another protocol violation is unavailability, as the rest of class 08', () => {
    for (const [shape, error] of postgresErrors('08P01', 'invalid message format')) expect(databaseFault(error), shape).toBe('unavailable');
  });
});

describe('/readyz after a storage fault (StorageHealth)', () => {
  it('says writes fail for 30 s after the last storage fault, or until a write is committed', () => {
    let now = 1_000_000;
    const health = new StorageHealth(() => now);
    expect(health.writesFailing()).toBe(false);

    health.noteFault('unavailable'); // not a storage fault: no change
    health.noteFault(null);
    expect(health.writesFailing()).toBe(false);

    health.noteFault('storage');
    now += 29_999;
    expect(health.writesFailing()).toBe(true);
    now += 1; // 30 s after the fault
    expect(health.writesFailing()).toBe(false);

    // Counted from the last fault: a second one 20 s after the first keeps it 30 s from there.
    health.noteFault('storage');
    now += 20_000;
    health.noteFault('storage');
    now += 20_000;
    expect(health.writesFailing()).toBe(true);
    now += 10_000;
    expect(health.writesFailing()).toBe(false);

    // A committed write ends it at once.
    health.noteFault('storage');
    now += 1_000;
    health.noteWriteCommitted();
    expect(health.writesFailing()).toBe(false);
  });
});

describe("SQLite's storage settings", () => {
  let testDatabase: TestDatabase;
  let database: Database;
  beforeAll(async () => {
    testDatabase = await createMigratedTestDatabase('sqlite');
    database = await openDatabase(parseConfig({ DATABASE_URL: testDatabase.url }));
  });
  afterAll(async () => {
    await database.close();
    await testDatabase.drop();
  });

  it('an opened database runs in WAL mode, synchronous=NORMAL, with the WAL file capped at 64 MiB', () => {
    // The handle the service runs on (it reads integers as BigInt).
    const pragma = (name: string) => {
      const value: unknown = database.sqlite!.pragma(name, { simple: true });
      return typeof value === 'bigint' ? Number(value) : value;
    };
    expect(pragma('journal_mode')).toBe('wal');
    expect(pragma('synchronous')).toBe(1); // NORMAL
    expect(pragma('journal_size_limit')).toBe(64 * 1024 * 1024);
  });

  it("Prisma's connection (keys, seeding) runs with the same settings", async () => {
    const read = async (name: string) =>
      Object.values((await database.prisma.$queryRawUnsafe<Array<Record<string, unknown>>>(`PRAGMA ${name}`))[0]!).map(Number)[0];
    expect(await read('synchronous')).toBe(1);
    expect(await read('journal_size_limit')).toBe(64 * 1024 * 1024);
  });
});
