// Waiting for SQLite's write lock without stopping the process. better-sqlite3 is synchronous: its
// busy timeout (SQLite sleeping until another connection lets go of the lock) blocks the event
// loop for as long as it waits, so with a 5 s timeout one create behind another process's lock
// froze every request, /healthz included. Here the busy timeout is a few milliseconds, and a
// statement or transaction that still finds the lock taken is retried after an asynchronous
// pause, with growing pauses, until SQLITE_LOCK_WAIT_MS have passed; then its error stands
// (503 with Retry-After, src/db/database-errors.ts).
//
// Transactions take the write lock when they begin (BEGIN IMMEDIATE, see immediateTransactions)
// and are retried whole when they cannot: in WAL mode a transaction begun DEFERRED that has read
// and then wants to write is refused at once (SQLITE_BUSY, or SQLITE_BUSY_SNAPSHOT when another
// connection wrote since its read) without SQLite's busy handler ever running, so under steady
// writes from another process it could be refused every time. Its work was rolled back, so
// running it again is safe.
//
// The one module that knows this; src/db/database.ts applies it to the service's connections.
import { PrismaClientKnownRequestError } from '@prisma/client/runtime/client';
import { isDriverAdapterError, type SqlDriverAdapter } from '@prisma/driver-adapter-utils';
import Sqlite from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';

/** How long one attempt may block the process waiting for the lock (SQLite's busy timeout). */
export const SQLITE_BUSY_TIMEOUT_MS = 5;
/** How long a statement or transaction waits for the lock in all, across attempts. */
export const SQLITE_LOCK_WAIT_MS = 5_000;
/** The longest pause between two attempts (short: waiting writers are not queued, the quick ones win). */
const MAX_PAUSE_MS = 20;

/** The lock was taken (SQLite, through better-sqlite3, the driver adapter or Prisma). */
export function isSqliteBusy(error: unknown): boolean {
  if (error instanceof Sqlite.SqliteError) return error.code.startsWith('SQLITE_BUSY');
  // The SQLite adapter reports SQLITE_BUSY as SocketTimeout; Prisma passes that on as P1008.
  if (error instanceof Error && isDriverAdapterError(error)) return error.cause.kind === 'SocketTimeout';
  return error instanceof PrismaClientKnownRequestError && error.code === 'P1008';
}

/** Runs `operation` until it does not fail with a busy lock, or SQLITE_LOCK_WAIT_MS have passed. */
export async function retryWhileBusy<T>(operation: () => T | Promise<T>, waitMs = SQLITE_LOCK_WAIT_MS): Promise<T> {
  const deadline = performance.now() + waitMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      const now = performance.now();
      if (!isSqliteBusy(error) || now >= deadline) throw error;
      // Growing pauses with jitter, so that waiting writers do not retry in lockstep.
      const pause = Math.min(MAX_PAUSE_MS, 2 ** attempt) * (0.5 + Math.random());
      await sleep(Math.min(pause, deadline - now));
    }
  }
}

/**
 * The adapter connection with its statements (each one a transaction of its own, autocommitted)
 * retried while the lock is taken. Transactions started on it are left alone: see above, and
 * retryingTransactions below.
 */
export function busyRetryingStatements(connection: SqlDriverAdapter): SqlDriverAdapter {
  return new Proxy(connection, {
    get(target, property) {
      if (property === 'queryRaw') return (query: Parameters<SqlDriverAdapter['queryRaw']>[0]) => retryWhileBusy(() => target.queryRaw(query));
      if (property === 'executeRaw') return (query: Parameters<SqlDriverAdapter['executeRaw']>[0]) => retryWhileBusy(() => target.executeRaw(query));
      const value: unknown = Reflect.get(target, property, target);
      // Bound to the connection itself: its methods use private fields.
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * Makes the transactions of a Prisma SQLite adapter connection begin IMMEDIATE (taking the write
 * lock at once) instead of DEFERRED. The adapter (@prisma/adapter-better-sqlite3, pinned exactly)
 * offers no option for it: it runs `this.client.prepare("BEGIN").run()` on its better-sqlite3
 * handle, so that handle is replaced by one that begins IMMEDIATE there (beginImmediate). The only place that
 * reaches into the adapter this way; it throws at start-up if the adapter's shape has changed, and
 * test/reliability/database-faults.test.ts checks that a transaction holds the write lock from
 * its start.
 */
export function immediateTransactions(connection: SqlDriverAdapter): SqlDriverAdapter {
  const adapter = connection as unknown as { client?: unknown };
  const handle = adapter.client;
  if (!(handle instanceof Sqlite)) throw new Error('@prisma/adapter-better-sqlite3 no longer keeps its better-sqlite3 handle as `client`');
  adapter.client = new Proxy(handle, {
    get(target, property) {
      if (property === 'prepare') return (sql: string) => (sql === 'BEGIN' ? beginImmediate(target) : target.prepare(sql));
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return connection;
}

/**
 * "BEGIN IMMEDIATE", or plain "BEGIN" when another connection holds the lock past the busy
 * timeout. The adapter must never see BEGIN fail: it would keep its transaction mutex locked for
 * good (it releases it only on commit or rollback), and every later transaction would time out.
 * Begun DEFERRED, the transaction fails at its first write instead, is rolled back (which releases
 * the mutex), and is retried whole (busyRetryingTransactions), beginning IMMEDIATE again.
 */
function beginImmediate(db: Sqlite.Database): { run(): Sqlite.RunResult } {
  return {
    run() {
      try {
        return db.prepare('BEGIN IMMEDIATE').run();
      } catch (error) {
        if (!isSqliteBusy(error)) throw error;
        return db.prepare('BEGIN').run();
      }
    },
  };
}

/** A Prisma client whose interactive transactions (`$transaction(async (tx) => …)`) are retried whole while the lock is taken. */
export function busyRetryingTransactions<Client extends { $transaction: (...args: never[]) => Promise<unknown> }>(client: Client): Client {
  return new Proxy(client, {
    get(target, property) {
      if (property === '$transaction') {
        return (...args: Parameters<Client['$transaction']>) => retryWhileBusy(() => target.$transaction(...args));
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
