// Waiting for SQLite's write lock without stopping the process. better-sqlite3's busy timeout
// sleeps synchronously, blocking every request (/healthz included) while another process holds
// the lock; so the busy timeout is a few milliseconds, and a statement or transaction that still
// finds the lock taken is retried after growing asynchronous pauses until SQLITE_LOCK_WAIT_MS have
// passed, then its error stands (503, src/db/database-errors.ts). Transactions take the lock at
// BEGIN IMMEDIATE, the only step that waits (a DEFERRED one that reads, then writes, is refused at
// once in WAL mode). Applied by src/db/sql.ts and src/db/database.ts.
import { PrismaClientKnownRequestError } from '@prisma/client/runtime/client';
import { isDriverAdapterError, type SqlDriverAdapter } from '@prisma/driver-adapter-utils';
import Sqlite from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';

/** How long one attempt may block the process waiting for the lock (SQLite's busy timeout). */
export const SQLITE_BUSY_TIMEOUT_MS = 5;
/** How long a statement or transaction waits for the lock in all, across attempts. */
const SQLITE_LOCK_WAIT_MS = 5_000;
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
 * retried while the lock is taken (Prisma's own queries: keys, seeding, tools).
 */
export function busyRetryingStatements(connection: SqlDriverAdapter): SqlDriverAdapter {
  return new Proxy(connection, {
    get(target, property) {
      if (property === 'queryRaw')
        return (query: Parameters<SqlDriverAdapter['queryRaw']>[0]) => retryWhileBusy(() => target.queryRaw(query));
      if (property === 'executeRaw')
        return (query: Parameters<SqlDriverAdapter['executeRaw']>[0]) => retryWhileBusy(() => target.executeRaw(query));
      const value: unknown = Reflect.get(target, property, target);
      // Bound to the connection itself: its methods use private fields.
      return typeof value === 'function' ? (value.bind(target) as unknown) : value;
    },
  });
}
