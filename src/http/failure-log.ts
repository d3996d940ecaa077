// The one logger of failed requests, for both surfaces and every way an error reaches an answer
// (a procedure's error, tRPC's own handler, Fastify's error handlers): a 5xx is logged once, here.
// A 503 (the database could not answer: src/db/database-errors.ts) is a warning, the caller was told
// to retry; any other 5xx is an error, with its cause (a caller never sees its message).
import type { FastifyBaseLogger } from 'fastify';

export function logFailure(log: FastifyBaseLogger, status: number, error: unknown): void {
  if (status < 500) return;
  const cause = (error as { cause?: unknown } | null)?.cause ?? error;
  if (status === 503) log.warn({ err: cause }, 'service unavailable: the database could not answer');
  else log.error({ err: cause }, 'request failed');
}
