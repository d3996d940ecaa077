// Which database errors mean "the database cannot serve right now" (unreachable, restarting,
// overloaded, timed out) rather than "this query is wrong". The API answers the first kind with
// 503, so clients and load balancers retry, and the second with 500. This is the only place that
// knows the drivers' error kinds; src/api/trpc.ts maps the answer to SERVICE_UNAVAILABLE.
// One runtime serves both generated clients, so their errors are instances of the same classes.
import { PrismaClientKnownRequestError } from '@prisma/client/runtime/client';
import { isDriverAdapterError } from '@prisma/driver-adapter-utils';
import Sqlite from 'better-sqlite3';
import pg from 'pg';

/**
 * Prisma's codes for the driver adapters' connection-level error kinds (the same on every
 * provider): P1001 server unreachable, P1002 reaching it timed out, P1008 operation timed out
 * (SQLite reports a lock held past its busy timeout this way), P1017 server closed the
 * connection, P2024 no connection free in the pool in time, P2037 too many connections.
 */
const UNAVAILABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2037']);

/**
 * PostgreSQL SQLSTATEs that adapter-pg passes on as a plain "postgres" error: class 08 connection
 * exceptions, class 53 insufficient resources (too many connections, out of memory or disk),
 * 57014 statement cancelled (our statement_timeout), 57P01–57P03 the server is shutting down,
 * crashed or not accepting connections yet (starting up, recovering).
 */
function isUnavailableSqlState(code: string): boolean {
  return /^(08|53)/.test(code) || ['57014', '57P01', '57P02', '57P03'].includes(code);
}

/**
 * The `pg` driver's own errors for a connection that failed or went silent. They carry no code,
 * and adapter-pg passes them through untranslated, so their fixed messages are all there is to
 * recognise them by.
 */
const PG_CONNECTION_FAILURES = new Set([
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Query read timeout',
]);

interface DriverAdapterErrorMeta {
  driverAdapterError?: { cause?: { kind?: string; originalCode?: string } };
}

/**
 * The same connection-level kinds as thrown by a driver adapter itself, for statements run on an
 * adapter directly (the health check's ping): the SQLite adapter reports a lock held past the
 * busy timeout as `SocketTimeout`.
 */
const UNAVAILABLE_ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'SocketTimeout', 'ConnectionClosed', 'TooManyConnections']);

/** Socket errors of a connection to the server that could not be made or broke (Node's codes). */
const SOCKET_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

export function isDatabaseUnavailable(error: unknown): boolean {
  // pg itself, for the statements run on the pool (src/db/sql.ts): a server error with its
  // SQLSTATE, or a socket error while connecting.
  if (error instanceof pg.DatabaseError) return isUnavailableSqlState(error.code ?? '');
  if (error instanceof Error && SOCKET_ERROR_CODES.has((error as { code?: unknown }).code as string)) return true;
  // better-sqlite3 itself, for the statements prepared on its handle: a lock held by another
  // process past the busy timeout (SQLITE_BUSY and its extended codes).
  if (error instanceof Sqlite.SqliteError) return error.code.startsWith('SQLITE_BUSY');
  if (error instanceof Error && isDriverAdapterError(error)) return UNAVAILABLE_ADAPTER_KINDS.has(error.cause.kind);
  if (error instanceof PrismaClientKnownRequestError) {
    if (UNAVAILABLE_PRISMA_CODES.has(error.code)) return true;
    const cause = (error.meta as DriverAdapterErrorMeta | undefined)?.driverAdapterError?.cause;
    return cause?.kind === 'postgres' && typeof cause.originalCode === 'string' && isUnavailableSqlState(cause.originalCode);
  }
  return error instanceof Error && PG_CONNECTION_FAILURES.has(error.message);
}
