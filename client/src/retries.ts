// Which failed calls createClient tries again, and after how long: the policy its retryLink
// applies. A call is retried when trying again cannot do harm and may succeed: the request never
// got an answer (the network failed, or the connection closed before the answer came; once), or the
// server said "not now" (503 Service Unavailable, 429 Too Many Requests). Queries are harmless to
// repeat; a mutation only with an Idempotency-Key, which makes the server replay its first answer
// instead of acting twice (docs/security.md, "Idempotent creates").
import type { Operation, TRPCClientError } from '@trpc/client';
import type { AppRouter } from './app-router.js';

export interface RetryPolicy {
  /** Retries after the first attempt; 0 turns retrying off. */
  retries: number;
  /** The longest wait before a retry: a Retry-After asking for more is not waited for, and the call fails. */
  maxRetryDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { retries: 3, maxRetryDelayMs: 10_000 };

/** The first backoff without Retry-After, doubled at each attempt (±50%, so that clients spread out). */
const BASE_BACKOFF_MS = 200;

/**
 * Retries of a call that got no answer at all. A browser reports a cross-origin refusal exactly as
 * a network failure (a TypeError, nothing else), and repeating a refusal only delays the message:
 * one retry rides out a dropped connection, and the error shows within a second.
 */
const NO_ANSWER_RETRIES = 1;

/** The statuses that say "try again later": nothing was done. */
const RETRYABLE_STATUSES = new Set([429, 503]);

/** Where createClient keeps a mutation's Idempotency-Key: `op.context[IDEMPOTENCY_KEY_CONTEXT]`. */
export const IDEMPOTENCY_KEY_CONTEXT = 'idempotencyKey';

/** The HTTP answer behind a tRPC error, when there was one (tRPC's fetch links put it in `meta`). */
function responseOf(error: TRPCClientError<AppRouter>): { status: number; headers: { get(name: string): string | null } } | undefined {
  const response = error.meta?.['response'] as { status?: unknown; headers?: { get?: unknown } } | undefined;
  if (typeof response?.status !== 'number' || typeof response.headers?.get !== 'function') return undefined;
  return response as { status: number; headers: { get(name: string): string | null } };
}

/** The request got no answer at all: fetch itself failed (it rejects with a TypeError then). */
function isNetworkFailure(error: TRPCClientError<AppRouter>): boolean {
  return error.data === undefined && responseOf(error) === undefined && error.cause?.name === 'TypeError';
}

/** Retry-After in milliseconds (delay-seconds or an HTTP date), or undefined when absent or unreadable. */
function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * How long to wait before attempt `attempts + 1` of `op`, which failed with `error` on attempt
 * `attempts`; null when it must not be retried.
 */
export function retryDelayMs(op: Operation, error: TRPCClientError<AppRouter>, attempts: number, policy: RetryPolicy): number | null {
  if (attempts > policy.retries || op.signal?.aborted) return null;
  if (op.type === 'subscription') return null;
  if (op.type === 'mutation' && typeof op.context[IDEMPOTENCY_KEY_CONTEXT] !== 'string') return null;

  const response = responseOf(error);
  const status = error.data?.httpStatus ?? response?.status;
  if (status === undefined ? !isNetworkFailure(error) || attempts > NO_ANSWER_RETRIES : !RETRYABLE_STATUSES.has(status)) return null;

  const asked = retryAfterMs(response?.headers.get('retry-after') ?? null);
  if (asked !== undefined) return asked <= policy.maxRetryDelayMs ? asked : null;
  const backoff = BASE_BACKOFF_MS * 2 ** (attempts - 1);
  return Math.min(policy.maxRetryDelayMs, backoff * (0.5 + Math.random()));
}
