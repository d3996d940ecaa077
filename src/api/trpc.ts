// The only place that calls initTRPC. It exports the building blocks the routers use.
import { initTRPC, TRPCError } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { DATABASE_FAULT_MESSAGES, databaseFault, RETRY_AFTER_SECONDS, type DatabaseFault } from '../db/database-errors.js';
import type { ApiKeyIdentity } from '../auth/api-keys.js';
import type { Deprecation } from '../domain/deprecation.js';
import type { Context } from './context.js';

/** Procedure metadata: trpc-to-openapi's `openapi` block plus the conventions it lacks. */
export type ApiMeta = OpenApiMeta<{
  /** The REST status of a success, when it is not 200 (e.g. 201 for a create). */
  successStatus?: 201;
  /** Marks the operation deprecated; src/http/deprecation.ts announces it on the wire. */
  deprecation?: Deprecation;
  /** A list whose full pages carry a `Link: <…>; rel="next"` header on REST (Context.setNextPage). */
  nextPageLink?: true;
}>;

const t = initTRPC
  .context<Context>()
  .meta<ApiMeta>()
  .create({
    // Never put stack traces in responses, whatever NODE_ENV says.
    isDev: false,
    errorFormatter({ shape, error }) {
      // An unexpected error's message can name internals (SQL, files); it is logged, not sent.
      if (error.code === 'INTERNAL_SERVER_ERROR') return { ...shape, message: 'Internal server error' };
      return shape;
    },
  });

/** Builds a router; one per domain (src/api/pets-router.ts), merged in src/api/root-router.ts. */
export const router = t.router;

/** The 503 for a database fault, with Retry-After: clients and load balancers retry, and may. */
function serviceUnavailable(ctx: Context, fault: DatabaseFault, cause?: unknown): TRPCError {
  ctx.retryAfter(RETRY_AFTER_SECONDS[fault]);
  return new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: DATABASE_FAULT_MESSAGES[fault], cause });
}

/**
 * A database that is unreachable, restarting, overloaded or out of space (src/db/database-errors.ts
 * decides) is a 503 SERVICE_UNAVAILABLE with Retry-After, so clients and load balancers retry, not
 * a 500 that says the request itself is broken. The one place this mapping is made, for both
 * surfaces (REST takes the status from the tRPC code). Every outcome of a mutation is also told to
 * the storage health (/readyz).
 */
function databaseFaultAs503<T extends { ok: boolean; error?: TRPCError }>(ctx: Context, type: string, result: T): T {
  if (result.ok) {
    if (type === 'mutation') ctx.storage.noteWriteCommitted();
    return result;
  }
  const fault = result.error ? databaseFault(result.error.cause) : null;
  if (fault === null) return result;
  ctx.storage.noteFault(fault);
  throw serviceUnavailable(ctx, fault, result.error!.cause);
}

/**
 * For procedures that need a valid API key (all of the contract's): authentication, then the
 * per-key rate limit, then the procedure with the 503 mapping above. Auth and the limit run before
 * input validation, so a caller without a key learns nothing about the input rules, and every
 * call counts, on either surface. One middleware, not three: tRPC copies the call's options at
 * each one, a measurable share of a small request (docs/benchmarks.md).
 */
export const protectedProcedure = t.procedure.use(async ({ ctx, type, next }) => {
  const { identity } = ctx;
  if (!identity) {
    if (ctx.authFault) throw serviceUnavailable(ctx, ctx.authFault);
    if (ctx.authRetryAfterSeconds > 0) {
      ctx.retryAfter(ctx.authRetryAfterSeconds);
      throw new TRPCError({
        code: 'TOO_MANY_REQUESTS',
        message: `Too many failed authentication attempts from this address; retry after ${ctx.authRetryAfterSeconds} s.`,
      });
    }
    throw new TRPCError({ code: 'UNAUTHORIZED', message: 'A valid API key is required: send "Authorization: Bearer <key>".' });
  }
  if (ctx.keyRateLimiter) {
    // The one place a request is counted against its key's budget, and refused past it.
    const taken = ctx.keyRateLimiter.take(identity.keyId);
    const decision = taken instanceof Promise ? await taken : taken; // in memory: no extra tick
    ctx.rateLimit(decision, ctx.keyRateLimiter.windowMs);
    if (!decision.allowed) {
      throw new TRPCError({
        code: 'TOO_MANY_REQUESTS',
        message: `Rate limit of ${decision.limit} requests a minute reached for this API key; retry after ${decision.resetSeconds} s.`,
      });
    }
  }
  // No `ctx` to next(): tRPC would copy the whole context for it (docs/benchmarks.md).
  return databaseFaultAs503(ctx, type, await next());
});

/**
 * The caller of a protectedProcedure (its middleware has refused every call without one). The
 * middleware does not narrow `ctx.identity` through next({ ctx }), which would copy the context.
 */
export function callerOf(ctx: Context): ApiKeyIdentity {
  if (!ctx.identity) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'A valid API key is required.' });
  return ctx.identity;
}
