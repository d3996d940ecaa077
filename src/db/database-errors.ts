// Which database errors mean "cannot serve now" (503 with Retry-After) rather than "this query is wrong":
// the one place that knows the drivers' error kinds. @see docs/reliability.md
// Both generated clients share one runtime, so one `instanceof` fits both.
import { PrismaClientKnownRequestError, PrismaClientUnknownRequestError } from '@prisma/client/runtime/client';
import { isDriverAdapterError } from '@prisma/driver-adapter-utils';
import Sqlite from 'better-sqlite3';
import pg from 'pg';

/** 'storage': disk full or a write failed (reads work); 'configuration': a pooler without `pgbouncer=true`. */
export type DatabaseFault = 'unavailable' | 'storage' | 'configuration';

/** Prisma's connection-level codes, on every provider (P1008 is also SQLite's lock held past its busy timeout). */
const UNAVAILABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2037']);

/**
 * Storage: disk full or an I/O error. Configuration: an unmarked pooler. Unavailable: classes 08 and 53,
 * statement_timeout, a server stopping or starting.
 */
function sqlStateFault(code: string, message = ''): DatabaseFault | null {
  if (code === '53100' || code === '58030') return 'storage';
  if (code === '26000' || code === '42P05') return 'configuration';
  if (code === '08P01' && message.startsWith('unsupported startup parameter')) return 'configuration';
  if (/^(08|53)/.test(code) || ['57014', '57P01', '57P02', '57P03'].includes(code)) return 'unavailable';
  return null;
}

/** SQLite's result codes, extended ones included (SQLITE_IOERR_WRITE). */
function sqliteCodeFault(code: string): DatabaseFault | null {
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'unavailable';
  if (code.startsWith('SQLITE_FULL') || code.startsWith('SQLITE_IOERR')) return 'storage';
  return null;
}

/** The error of a query refused because the pool's wait queue is full (src/db/database.ts). */
export const POOL_QUEUE_FULL = 'the database connection pool has DATABASE_POOL_QUEUE_LIMIT queries waiting already';

/** pg's own connection errors: they have no code, so only the message tells. */
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

/** The same kinds, thrown by an adapter itself; SQLite's adapter reports a lock held too long as `SocketTimeout`. */
const UNAVAILABLE_ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'SocketTimeout', 'ConnectionClosed', 'TooManyConnections']);

function adapterCauseFault(cause: AdapterErrorCause | undefined): DatabaseFault | null {
  if (!cause?.kind) return null;
  if (UNAVAILABLE_ADAPTER_KINDS.has(cause.kind)) return 'unavailable';
  // `originalCode`: better-sqlite3's code name (its `extendedCode` is 1 for all), or the SQLSTATE.
  if (cause.kind === 'sqlite' && typeof cause.originalCode === 'string') return sqliteCodeFault(cause.originalCode);
  if (cause.kind === 'postgres' && typeof cause.originalCode === 'string') return sqlStateFault(cause.originalCode, cause.originalMessage);
  return null;
}

function adapterCauseOf(error: unknown): (AdapterErrorCause & { host?: string; port?: number }) | undefined {
  if (error instanceof Error && isDriverAdapterError(error)) return error.cause as AdapterErrorCause;
  if (error instanceof PrismaClientKnownRequestError)
    return (error.meta as { driverAdapterError?: { cause?: AdapterErrorCause } } | undefined)?.driverAdapterError?.cause;
  return undefined;
}

/** What kind of "cannot serve now" `error` is, or null when it is not one (a bug, a bad query). */
export function databaseFault(error: unknown): DatabaseFault | null {
  if (error instanceof pg.DatabaseError) return sqlStateFault(error.code ?? '', error.message);
  if (error instanceof Sqlite.SqliteError) return sqliteCodeFault(error.code);
  if (error instanceof Error && isDriverAdapterError(error)) return adapterCauseFault(adapterCauseOf(error));
  if (error instanceof PrismaClientKnownRequestError) {
    if (UNAVAILABLE_PRISMA_CODES.has(error.code)) return 'unavailable';
    return adapterCauseFault(adapterCauseOf(error));
  }
  if (error instanceof PrismaClientUnknownRequestError) {
    // Prisma wraps some driver failures (a failed COMMIT) without a code.
    return databaseFault((error as { cause?: unknown }).cause);
  }
  if (error instanceof Error && PG_CONNECTION_FAILURES.has(error.message)) return 'unavailable';
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

/** PgBouncer's words when it has no server connection to give. */
const POOLER_WITHOUT_SERVER = /^(server login|server conn crashed|query_wait_timeout)/;

/**
 * Behind a transaction pooler, which side an outage comes from: 'server' for PostgreSQL's own outage errors,
 * PgBouncer having no server, or a query past our timeout; else 'pooler'.
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

/** What the operator is told, once, about a 'configuration' fault. */
export const POOLER_HINT =
  'DATABASE_URL goes through a transaction pooler (PgBouncer in pool_mode=transaction, or a managed pooler): it refused ' +
  'a startup parameter, or lost a prepared statement between server connections (see err). Add pgbouncer=true to ' +
  'DATABASE_URL (postgresql://user@pooler:6432/db?pgbouncer=true), and set DATABASE_DIRECT_URL to a direct connection ' +
  'for migrations (docs/operations.md, PgBouncer). Until then requests that reach the database answer 503.';

const MAX_CAUSE_LENGTH = 200;

function lastLine(text: string): string {
  const lines = text.split('\n').map((line) => line.trim());
  return lines.filter(Boolean).at(-1) ?? '';
}

/** The fault in one short line for the operator: the server's, pooler's or socket's words, never Prisma's text or a stack. */
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

function describeCause(cause: (AdapterErrorCause & { host?: string; port?: number }) | undefined): string | null {
  if (!cause?.kind) return null;
  const where = cause.host === undefined ? undefined : `${cause.host}:${cause.port ?? ''}`;
  const words = [cause.kind, where, cause.originalCode, cause.originalMessage].filter((word) => typeof word === 'string' && word !== '');
  return words.join(' ');
}
