// The one logger of failed requests, however the error reached the answer: a 5xx is logged once, here.
// A 503 (the database could not answer) goes to `databaseHealth`, which logs an outage once each way;
// without one it is a warning.
import type { FastifyBaseLogger } from 'fastify';
import type { DatabaseHealth } from '../observability/dependencies.js';

const UNAVAILABLE = 'service unavailable: the database could not answer';

export function logFailure(
  log: FastifyBaseLogger,
  status: number,
  error: unknown,
  databaseHealth?: Pick<DatabaseHealth, 'failed'>,
  what = 'request failed',
): void {
  if (status < 500) return;
  const cause = (error as { cause?: unknown } | null)?.cause ?? error;
  if (status !== 503) log.error({ err: cause }, what);
  else logUnavailable(log, cause, databaseHealth);
}

/** A request the database could not serve (503), `cause` being the database's own error. */
export function logUnavailable(
  log: FastifyBaseLogger,
  cause: unknown,
  databaseHealth?: Pick<DatabaseHealth, 'failed'>,
  what = UNAVAILABLE,
): void {
  if (databaseHealth) databaseHealth.failed(cause, log, what);
  else log.warn({ err: cause }, what);
}
