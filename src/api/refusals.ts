// Why a request is refused before its procedure runs, decided here once. The surfaces' early gates
// call these before a body is read (src/http/rest-plugin.ts, src/http/trpc-plugin.ts), and the
// procedures' middleware (src/api/trpc.ts) calls the same for every call that reaches a procedure,
// so both surfaces refuse for the same reasons with the same words. src/api/errors.ts turns a
// refusal into each surface's answer. A new reason to refuse early is one more function here.
import type { ApiKeyIdentity } from '../auth/api-keys.js';
import { DATABASE_FAULT_MESSAGES, RETRY_AFTER_SECONDS, type DatabaseFault } from '../db/database-errors.js';
import type { LimitDecision } from '../limits/fixed-window-limiter.js';

/** The tRPC error codes a refusal may carry (a new kind of refusal may add one here). */
export const REFUSAL_CODES = ['BAD_REQUEST', 'NOT_FOUND', 'UNAUTHORIZED', 'TOO_MANY_REQUESTS', 'SERVICE_UNAVAILABLE'] as const;

/**
 * A refusal: tRPC's error code (the REST status is tRPC's for it), the message for the caller, and
 * when it may try again (Retry-After). Shaped like TRPCError's options: `new TRPCError(refusal)`.
 */
export interface Refusal {
  readonly code: (typeof REFUSAL_CODES)[number];
  readonly message: string;
  /** Seconds until trying again can succeed; absent when waiting alone will not help (a missing key). */
  readonly retryAfterSeconds?: number;
}

/** What authentication found out about the caller (src/http/authentication.ts puts it on each request). */
export interface CallerCheck {
  /** The verified API key, or null when the request had none or a bad one. */
  readonly identity: ApiKeyIdentity | null;
  /** Seconds until the caller's address may try keys again after too many wrong ones; 0 when it may. */
  readonly authRetryAfterSeconds: number;
  /** The database could not check the key. */
  readonly authFault: DatabaseFault | null;
}

const NO_VALID_KEY: Refusal = Object.freeze({
  code: 'UNAUTHORIZED',
  message: 'A valid API key is required: send "Authorization: Bearer <key>".',
});

const DATABASE_FAULTS = Object.fromEntries(
  (Object.keys(RETRY_AFTER_SECONDS) as DatabaseFault[]).map((fault) => [
    fault,
    Object.freeze({ code: 'SERVICE_UNAVAILABLE', message: DATABASE_FAULT_MESSAGES[fault], retryAfterSeconds: RETRY_AFTER_SECONDS[fault] }),
  ]),
) as Record<DatabaseFault, Refusal>;

/**
 * The one decision "no valid identity → refused": null when the caller is known; else 503 when the
 * database could not check its key, 429 while its address is locked out for wrong keys, else 401.
 */
export function identityRefusal(caller: CallerCheck): Refusal | null {
  if (caller.identity !== null) return null;
  if (caller.authFault !== null) return DATABASE_FAULTS[caller.authFault];
  const seconds = caller.authRetryAfterSeconds;
  if (seconds > 0) {
    return {
      code: 'TOO_MANY_REQUESTS',
      message: `Too many failed authentication attempts from this address; retry after ${seconds} s.`,
      retryAfterSeconds: seconds,
    };
  }
  return NO_VALID_KEY;
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
    retryAfterSeconds: decision.resetSeconds,
  };
}

/** A tRPC batch naming more calls than TRPC_MAX_BATCH_CALLS: refused as a whole. */
export function batchTooLargeRefusal(max: number): Refusal {
  return { code: 'BAD_REQUEST', message: `A batch may name at most ${max} calls; split it into several requests.` };
}

/** A tRPC batch naming a procedure that does not exist: refused as a whole, once, whatever the count. */
export function unknownProcedureRefusal(name: string): Refusal {
  const shown = name.length > 64 ? `${name.slice(0, 64)}…` : name;
  return { code: 'NOT_FOUND', message: `No procedure found on path "${shown}"` };
}
