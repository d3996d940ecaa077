// The one logger of failed requests, for both surfaces and every way an error reaches an answer
// (a procedure's error, tRPC's own handler, Fastify's error handlers): a 5xx is logged once, here.
// A 503 (the database could not answer: src/db/database-errors.ts) is told to `databaseHealth`,
// which logs an outage once each way and each request's cause at debug level
// (src/observability/dependencies.ts); without one it is a warning. The caller was told to retry.
// Any other 5xx is an error, with its cause (a caller never sees its message).
import type { FastifyBaseLogger } from 'fastify';
import type { DatabaseHealth } from '../observability/dependencies.js';

const UNAVAILABLE = 'service unavailable: the database could not answer';

export function logFailure(log: FastifyBaseLogger, status: number, error: unknown, databaseHealth?: Pick<DatabaseHealth, 'failed'>): void {
  if (status < 500) return;
  const cause = (error as { cause?: unknown } | null)?.cause ?? error;
  if (status !== 503) log.error({ err: cause }, 'request failed');
  else if (databaseHealth) databaseHealth.failed(cause, log, UNAVAILABLE);
  else log.warn({ err: cause }, UNAVAILABLE);
}
