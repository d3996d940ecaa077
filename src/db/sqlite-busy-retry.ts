// Waits for SQLite's write lock without blocking the process: better-sqlite3's busy timeout sleeps
// synchronously, so it is kept at a few ms and the rest is asynchronous retries.
// @see docs/reliability.md "Waiting for the lock"
import { PrismaClientKnownRequestError } from '@prisma/client/runtime/client';
import { isDriverAdapterError, type SqlDriverAdapter } from '@prisma/driver-adapter-utils';
import Sqlite from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';

export const SQLITE_BUSY_TIMEOUT_MS = 5;
const SQLITE_LOCK_WAIT_MS = 5_000;
/** Short: waiting writers are not queued; the quick ones win. */
const MAX_PAUSE_MS = 20;

export function isSqliteBusy(error: unknown): boolean {
  if (error instanceof Sqlite.SqliteError) return error.code.startsWith('SQLITE_BUSY');
  // The SQLite adapter reports SQLITE_BUSY as SocketTimeout; Prisma passes that on as P1008.
  if (error instanceof Error && isDriverAdapterError(error)) return error.cause.kind === 'SocketTimeout';
  return error instanceof PrismaClientKnownRequestError && error.code === 'P1008';
}

export async function retryWhileBusy<T>(operation: () => T | Promise<T>, waitMs = SQLITE_LOCK_WAIT_MS): Promise<T> {
  const deadline = performance.now() + waitMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      const now = performance.now();
      if (!isSqliteBusy(error) || now >= deadline) throw error;
      const pause = Math.min(MAX_PAUSE_MS, 2 ** attempt) * (0.5 + Math.random());
      await sleep(Math.min(pause, deadline - now));
    }
  }
}

/** Prisma's own queries (keys, seeding, tools), retried while the lock is taken. */
export function busyRetryingStatements(connection: SqlDriverAdapter): SqlDriverAdapter {
  return new Proxy(connection, {
    get(target, property) {
      if (property === 'queryRaw')
        return (query: Parameters<SqlDriverAdapter['queryRaw']>[0]) => retryWhileBusy(() => target.queryRaw(query));
      if (property === 'executeRaw')
        return (query: Parameters<SqlDriverAdapter['executeRaw']>[0]) => retryWhileBusy(() => target.executeRaw(query));
      const value: unknown = Reflect.get(target, property, target);
      // Bound: its methods use private fields.
      return typeof value === 'function' ? (value.bind(target) as unknown) : value;
    },
  });
}
