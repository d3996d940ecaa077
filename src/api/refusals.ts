// Why a request is refused before its procedure runs: each refusal is made here, once, by the code
// that decides it (authentication: the key; the tRPC surface: a batch's shape; protectedProcedure:
// the per-key limit and a database fault), so both surfaces refuse for the same reasons with the
// same words. src/api/errors.ts turns a refusal into each surface's answer. A new reason to refuse
// early is one more function here.
import type { ApiKeyIdentity } from '../auth/api-keys.js';
import { DATABASE_FAULT_MESSAGES, RETRY_AFTER_SECONDS, type DatabaseFault } from '../db/database-errors.js';
import type { LimitDecision } from '../limits/fixed-window-limiter.js';

/** The tRPC error codes a refusal may carry (a new kind of refusal may add one here). */
export const REFUSAL_CODES = ['BAD_REQUEST', 'NOT_FOUND', 'UNAUTHORIZED', 'TOO_MANY_REQUESTS', 'SERVICE_UNAVAILABLE'] as const;

/**
 * Why a request was refused, recorded on it where the refusal is decided (`request.call.refusal`): the
 * metrics and the request log read it there, never from the status code.
 */
type RefusalReason =
  'missing_key' | 'invalid_key' | 'auth_failures' | 'per_key' | 'database_unavailable' | 'batch_too_large' | 'unknown_procedure';

/**
 * A refusal: tRPC's error code (the REST status is tRPC's for it), the message for the caller, and
 * when it may try again (Retry-After). Shaped like TRPCError's options: `new TRPCError(refusal)`.
 */
export interface Refusal {
  readonly code: (typeof REFUSAL_CODES)[number];
  readonly message: string;
  readonly reason: RefusalReason;
  /** Seconds until trying again can succeed; absent when waiting alone will not help (a missing key). */
  readonly retryAfterSeconds?: number;
}

/**
 * Who is calling, decided once per request by src/http/authentication.ts: a verified key, or the
 * refusal that its absence means (401, 429 for a locked-out address, 503). The surfaces refuse with
 * `refusal` before a body is read; protectedProcedure (src/api/trpc.ts) narrows to `identity`.
 */
export type Caller = { readonly identity: ApiKeyIdentity; readonly refusal: null } | { readonly identity: null; readonly refusal: Refusal };

/** A caller with a verified key. */
export function knownCaller(identity: ApiKeyIdentity): Caller {
  return { identity, refusal: null };
}

/** A caller without a valid key, and why. */
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

/**
 * A database that is unreachable, restarting, overloaded or out of space (src/db/database-errors.ts
 * decides): 503 with Retry-After, so that clients and load balancers retry, not a 500.
 */
export function databaseFaultRefusal(fault: DatabaseFault): Refusal {
  return DATABASE_FAULTS[fault];
}

/** A key past its per-key rate limit. */
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
