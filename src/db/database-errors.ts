// Which database errors mean "the database cannot serve right now" rather than "this query is
// wrong": the only place that knows the drivers' error kinds. Three kinds, each a 503 with
// Retry-After (the refusal in src/api/refusals.ts, answered by src/api/errors.ts), never a 500:
//   - 'unavailable': unreachable, restarting, overloaded, timed out, or locked by another process;
//   - 'storage': the disk is full or a write failed; reads still work (docs/reliability.md);
//   - 'configuration': a transaction pooler without `pgbouncer=true` in DATABASE_URL (refused
//     startup parameter, lost named statements); src/db/database.ts logs POOLER_HINT once.
// One runtime serves both generated clients, so their errors are instances of the same classes.
import { PrismaClientKnownRequestError, PrismaClientUnknownRequestError } from '@prisma/client/runtime/client';
import { isDriverAdapterError } from '@prisma/driver-adapter-utils';
import Sqlite from 'better-sqlite3';
import pg from 'pg';

export type DatabaseFault = 'unavailable' | 'storage' | 'configuration';

/**
 * Prisma's codes for the driver adapters' connection-level error kinds (the same on every
 * provider): P1001 server unreachable, P1002 reaching it timed out, P1008 operation timed out
 * (SQLite reports a lock held past its busy timeout this way), P1017 server closed the
 * connection, P2024 no connection free in the pool in time, P2037 too many connections.
 */
const UNAVAILABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2037']);

/**
 * PostgreSQL SQLSTATEs: 53100 disk full and 58030 I/O error are storage faults. A transaction
 * pooler not named in DATABASE_URL is a configuration fault: 26000 "prepared statement … does not
 * exist" and 42P05 "prepared statement … already exists" (what it does to named statements), and
 * PgBouncer's refusal of a startup parameter (08P01 "unsupported startup parameter: …"; PostgreSQL
 * itself has another code for a parameter it does not know). The rest of class 53 (too many
 * connections, out of memory), class 08 connection exceptions, 57014 statement cancelled (our
 * statement_timeout), 57P01–57P03 the server is shutting down, crashed or not accepting
 * connections yet (starting up, recovering) mean unavailable.
 */
function sqlStateFault(code: string, message = ''): DatabaseFault | null {
  if (code === '53100' || code === '58030') return 'storage';
  if (code === '26000' || code === '42P05') return 'configuration';
  if (code === '08P01' && message.startsWith('unsupported startup parameter')) return 'configuration';
  if (/^(08|53)/.test(code) || ['57014', '57P01', '57P02', '57P03'].includes(code)) return 'unavailable';
  return null;
}

/**
 * SQLite's result codes (better-sqlite3 names them, extended codes included, e.g. SQLITE_IOERR_WRITE):
 * a lock held by another process past the busy timeout, or a write the disk could not take.
 */
function sqliteCodeFault(code: string): DatabaseFault | null {
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'unavailable';
  if (code.startsWith('SQLITE_FULL') || code.startsWith('SQLITE_IOERR')) return 'storage';
  return null;
}

/** The error of a query refused because the pool's wait queue is full (src/db/database.ts). */
export const POOL_QUEUE_FULL = 'the database connection pool has DATABASE_POOL_QUEUE_LIMIT queries waiting already';

/**
 * The `pg` driver's own errors for a connection that failed or went silent. They carry no code,
 * and adapter-pg passes them through untranslated, so their fixed messages are all there is to
 * recognise them by.
 */
const PG_CONNECTION_FAILURES = new Set([
  POOL_QUEUE_FULL,
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'Client has encountered a connection error and is not queryable',
  'Cannot use a pool after calling end on the pool',
]);

interface AdapterErrorCause {
  kind?: string;
  originalCode?: string;
  originalMessage?: string;
  code?: string;
}

/**
 * The same connection-level kinds as thrown by a driver adapter itself, for statements run on an
 * adapter directly (the health check's ping): the SQLite adapter reports a lock held past the
 * busy timeout as `SocketTimeout`.
 */
const UNAVAILABLE_ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'SocketTimeout', 'ConnectionClosed', 'TooManyConnections']);

/** A driver adapter's error description: its kind, and for `sqlite`/`postgres` the driver's own code. */
function adapterCauseFault(cause: AdapterErrorCause | undefined): DatabaseFault | null {
  if (!cause?.kind) return null;
  if (UNAVAILABLE_ADAPTER_KINDS.has(cause.kind)) return 'unavailable';
  // The SQLite adapter keeps better-sqlite3's code name as `originalCode` (its `extendedCode` is 1
  // for every named code); the PostgreSQL adapter keeps the SQLSTATE there.
  if (cause.kind === 'sqlite' && typeof cause.originalCode === 'string') return sqliteCodeFault(cause.originalCode);
  if (cause.kind === 'postgres' && typeof cause.originalCode === 'string') return sqlStateFault(cause.originalCode, cause.originalMessage);
  return null;
}

/** The driver adapter's description of `error`, thrown by an adapter or wrapped by Prisma. */
function adapterCauseOf(error: unknown): (AdapterErrorCause & { host?: string; port?: number }) | undefined {
  if (error instanceof Error && isDriverAdapterError(error)) return error.cause as AdapterErrorCause;
  if (error instanceof PrismaClientKnownRequestError)
    return (error.meta as { driverAdapterError?: { cause?: AdapterErrorCause } } | undefined)?.driverAdapterError?.cause;
  return undefined;
}

/** What kind of "cannot serve now" `error` is, or null when it is not one (a bug, a bad query). */
export function databaseFault(error: unknown): DatabaseFault | null {
  // pg itself, for the statements run on the pool (src/db/sql.ts): a server error with its SQLSTATE.
  if (error instanceof pg.DatabaseError) return sqlStateFault(error.code ?? '', error.message);
  // better-sqlite3 itself, for the statements prepared on its handle.
  if (error instanceof Sqlite.SqliteError) return sqliteCodeFault(error.code);
  if (error instanceof Error && isDriverAdapterError(error)) return adapterCauseFault(adapterCauseOf(error));
  if (error instanceof PrismaClientKnownRequestError) {
    if (UNAVAILABLE_PRISMA_CODES.has(error.code)) return 'unavailable';
    return adapterCauseFault(adapterCauseOf(error));
  }
  if (error instanceof PrismaClientUnknownRequestError) {
    // Prisma wraps some driver failures (a COMMIT that failed) without a code: look at the cause.
    return databaseFault((error as { cause?: unknown }).cause);
  }
  if (error instanceof Error && PG_CONNECTION_FAILURES.has(error.message)) return 'unavailable';
  // Node's own socket errors from pg while (re)connecting.
  const code = (error as { code?: unknown } | null)?.code;
  if (
    typeof code === 'string' &&
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'].includes(code)
  )
    return 'unavailable';
  return null;
}

/** A PostgreSQL error's SQLSTATE and message, however it reached us (pg, the adapter, Prisma). */
function serverError(error: unknown): { code: string; message: string } | null {
  if (error instanceof pg.DatabaseError) return { code: error.code ?? '', message: error.message };
  if (error instanceof PrismaClientUnknownRequestError) return serverError((error as { cause?: unknown }).cause);
  const cause = adapterCauseOf(error);
  if (cause?.kind === 'postgres' && typeof cause.originalCode === 'string')
    return { code: cause.originalCode, message: cause.originalMessage ?? '' };
  return null;
}

/**
 * PgBouncer's own words when it has no server connection to give: it cannot log in to PostgreSQL
 * (`server login has been failing…`, `server login failed: …`), a server connection broke
 * (`server conn crashed?`), or a query waited past its `query_wait_timeout`.
 */
const POOLER_WITHOUT_SERVER = /^(server login|server conn crashed|query_wait_timeout)/;

/**
 * Behind a transaction pooler, which side an outage's fault comes from. 'server' (the PostgreSQL
 * behind it): an error of PostgreSQL's own that the pooler passed on (57P01–57P03 shutting down,
 * crashed, starting; 57014 its statement_timeout; class 53 out of connections or memory; class 58),
 * PgBouncer saying it has no server (POOLER_WITHOUT_SERVER), or a query it held past our timeout
 * (`Query read timeout`: it was waiting for a server). 'pooler' (PgBouncer itself): the rest, its
 * port refused, its connection cut, its own refusals.
 */
export function faultSideBehindPooler(error: unknown): 'server' | 'pooler' {
  const server = serverError(error);
  if (server) return /^(57P0[123]|57014|53|58)/.test(server.code) || POOLER_WITHOUT_SERVER.test(server.message) ? 'server' : 'pooler';
  return error instanceof Error && error.message === 'Query read timeout' ? 'server' : 'pooler';
}

/** Seconds a client is asked to wait (Retry-After) before retrying after each kind of fault. */
export const RETRY_AFTER_SECONDS: Record<DatabaseFault, number> = { unavailable: 2, storage: 30, configuration: 5 };

/** What a client is told: nothing about why, just that retrying makes sense. */
export const DATABASE_FAULT_MESSAGES: Record<DatabaseFault, string> = {
  unavailable: 'The database is unavailable at the moment; try again shortly.',
  storage: 'The database cannot store anything at the moment (no space left); reads still work; try again later.',
  configuration: 'The service cannot use its database reliably at the moment (its operator is told why); try again shortly.',
};

/** What the operator is told, once, about a 'configuration' fault: what to change. */
export const POOLER_HINT =
  'DATABASE_URL goes through a transaction pooler (PgBouncer in pool_mode=transaction, or a managed pooler): it refused ' +
  'a startup parameter, or lost a prepared statement between server connections (see err). Add pgbouncer=true to ' +
  'DATABASE_URL (postgresql://user@pooler:6432/db?pgbouncer=true), and set DATABASE_DIRECT_URL to a direct connection ' +
  'for migrations (docs/operations.md, PgBouncer). Until then requests that reach the database answer 503.';

/** The longest cause an operator's line quotes. */
const MAX_CAUSE_LENGTH = 200;

function lastLine(text: string): string {
  const lines = text.split('\n').map((line) => line.trim());
  return lines.filter(Boolean).at(-1) ?? '';
}

/**
 * What went wrong, in one short line, for the operator's "down" line: the server's or pooler's own
 * words (a SQLSTATE and its message: PgBouncer says so when it cannot log in to PostgreSQL), or the
 * socket's (`connect ECONNREFUSED 127.0.0.1:6432`), never Prisma's multi-line invocation text
 * or a stack.
 */
export function describeDatabaseFault(error: unknown): string {
  return describe(error).slice(0, MAX_CAUSE_LENGTH);
}

function describe(error: unknown): string {
  if (error instanceof pg.DatabaseError) return `${error.code ?? ''} ${error.message}`.trim();
  if (error instanceof Sqlite.SqliteError) return `${error.code}: ${error.message}`;
  if (error instanceof Error && isDriverAdapterError(error)) return describeCause(adapterCauseOf(error)) ?? error.message;
  if (error instanceof PrismaClientKnownRequestError)
    return describeCause(adapterCauseOf(error)) ?? `${error.code} ${lastLine(error.message)}`;
  if (error instanceof PrismaClientUnknownRequestError) {
    const cause = (error as { cause?: unknown }).cause;
    return cause === undefined ? lastLine(error.message) : describe(cause);
  }
  if (error instanceof Error) return lastLine(error.message) || error.name;
  return String(error);
}

/** An adapter's error kind, where it was trying to reach (DatabaseNotReachable), and the driver's own code and words. */
function describeCause(cause: (AdapterErrorCause & { host?: string; port?: number }) | undefined): string | null {
  if (!cause?.kind) return null;
  const where = cause.host === undefined ? undefined : `${cause.host}:${cause.port ?? ''}`;
  const words = [cause.kind, where, cause.originalCode, cause.originalMessage].filter((word) => typeof word === 'string' && word !== '');
  return words.join(' ');
}
