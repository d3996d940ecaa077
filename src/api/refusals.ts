// Why a request is refused before its procedure runs, made here for the code that decides it, so
// both surfaces refuse for the same reasons with the same words (src/api/errors.ts shapes the answer).
import { DATABASE_FAULT_MESSAGES, RETRY_AFTER_SECONDS, type DatabaseFault } from '../db/database-errors.js';
import type { ApiKeyIdentity } from '../domain/api-key-shape.js';
import type { LimitDecision } from '../limits/fixed-window-limiter.js';

/** The tRPC error codes a refusal may carry. */
export const REFUSAL_CODES = ['BAD_REQUEST', 'NOT_FOUND', 'UNAUTHORIZED', 'TOO_MANY_REQUESTS', 'SERVICE_UNAVAILABLE'] as const;

/** Recorded on the request (`request.call.refusal`): the metrics and the log read it there, not from the status. */
type RefusalReason =
  'missing_key' | 'invalid_key' | 'auth_failures' | 'per_key' | 'database_unavailable' | 'batch_too_large' | 'unknown_procedure';

/** A refusal, shaped like TRPCError's options: the REST status is tRPC's for its code. */
export interface Refusal {
  readonly code: (typeof REFUSAL_CODES)[number];
  readonly message: string;
  readonly reason: RefusalReason;
  /** Seconds until trying again can succeed; absent when waiting alone will not help (a missing key). */
  readonly retryAfterSeconds?: number;
}

/**
 * Who is calling, decided once per request by src/http/call-pipeline.ts (admission): a verified key, or the refusal
 * its absence means. The surfaces refuse with it before a body is read.
 */
export type Caller = { readonly identity: ApiKeyIdentity; readonly refusal: null } | { readonly identity: null; readonly refusal: Refusal };

export function knownCaller(identity: ApiKeyIdentity): Caller {
  return { identity, refusal: null };
}

export function refusedCaller(refusal: Refusal): Caller {
  return { identity: null, refusal };
}

const NO_VALID_KEY_MESSAGE = 'A valid API key is required: send "Authorization: Bearer <key>".';
const MISSING_KEY: Refusal = Object.freeze({ code: 'UNAUTHORIZED', message: NO_VALID_KEY_MESSAGE, reason: 'missing_key' });
const INVALID_KEY: Refusal = Object.freeze({ code: 'UNAUTHORIZED', message: NO_VALID_KEY_MESSAGE, reason: 'invalid_key' });

const DATABASE_FAULTS = Object.fromEntries(
  (Object.keys(RETRY_AFTER_SECONDS) as DatabaseFault[]).map((fault) => [
    fault,
    Object.freeze({
      code: 'SERVICE_UNAVAILABLE',
      message: DATABASE_FAULT_MESSAGES[fault],
      reason: 'database_unavailable',
      retryAfterSeconds: RETRY_AFTER_SECONDS[fault],
    }),
  ]),
) as Record<DatabaseFault, Refusal>;

/** No valid key (401): none sent, or one that is not valid (malformed, unknown, revoked). */
export function keyRefusal(sent: boolean): Refusal {
  return sent ? INVALID_KEY : MISSING_KEY;
}

/** The caller's address made too many failed attempts (429): keys from it are not checked for `seconds`. */
export function lockedOutRefusal(seconds: number): Refusal {
  return {
    code: 'TOO_MANY_REQUESTS',
    message: `Too many failed authentication attempts from this address; retry after ${seconds} s.`,
    reason: 'auth_failures',
    retryAfterSeconds: seconds,
  };
}

/** A database fault (src/db/database-errors.ts decides): 503 with Retry-After, so that clients retry, not a 500. */
export function databaseFaultRefusal(fault: DatabaseFault): Refusal {
  return DATABASE_FAULTS[fault];
}

export function keyRateLimitRefusal(decision: LimitDecision): Refusal {
  return {
    code: 'TOO_MANY_REQUESTS',
    message: `Rate limit of ${decision.limit} requests a minute reached for this API key; retry after ${decision.resetSeconds} s.`,
    reason: 'per_key',
    retryAfterSeconds: decision.resetSeconds,
  };
}

/** A tRPC batch naming more calls than TRPC_MAX_BATCH_CALLS: refused as a whole. */
export function batchTooLargeRefusal(max: number): Refusal {
  return {
    code: 'BAD_REQUEST',
    message: `A batch may name at most ${max} calls; split it into several requests.`,
    reason: 'batch_too_large',
  };
}

/** A tRPC batch naming a procedure that does not exist: refused as a whole, once, whatever the count. */
export function unknownProcedureRefusal(name: string): Refusal {
  const shown = name.length > 64 ? `${name.slice(0, 64)}…` : name;
  return { code: 'NOT_FOUND', message: `No procedure found on path "${shown}"`, reason: 'unknown_procedure' };
}
