// The one logger of failed requests, however the error reached the answer: a 5xx is logged once, here.
// A 503 (the database could not answer) goes to `databaseHealth`, which logs an outage once each way;
// without one it is a warning.
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
