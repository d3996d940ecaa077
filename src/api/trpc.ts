// The only place that calls initTRPC. It exports the building blocks the routers use.
import { initTRPC, TRPCError } from '@trpc/server';
import type { ApiKeyIdentity } from '../auth/api-keys.js';
import { databaseFault } from '../db/database-errors.js';
import type { Context } from './context.js';
import { formatTrpcError } from './errors.js';
import type { ApiMeta } from './meta.js';
import { databaseFaultRefusal, identityRefusal, keyRateLimitRefusal, type Refusal } from './refusals.js';

const t = initTRPC.context<Context>().meta<ApiMeta>().create({
  // Never put stack traces in responses, whatever NODE_ENV says.
  isDev: false,
  // What a caller may see of an error (src/api/errors.ts shapes every error answer).
  errorFormatter: formatTrpcError,
});

/** Builds a router; one per domain (src/api/pets-router.ts), merged in src/api/root-router.ts. */
export const router = t.router;

/** A refusal thrown from a procedure, its Retry-After reported to the context. */
function refuse(ctx: Context, refusal: Refusal, cause?: unknown): TRPCError {
  if (refusal.retryAfterSeconds !== undefined) ctx.retryAfter(refusal.retryAfterSeconds);
  return new TRPCError({ code: refusal.code, message: refusal.message, cause });
}

/**
 * A database fault in a call's result becomes its 503 (src/api/refusals.ts), on both surfaces. Every
 * outcome of a mutation is also told to the storage health (/readyz).
 */
function databaseFaultAs503<T extends { ok: boolean; error?: TRPCError }>(ctx: Context, type: string, result: T): T {
  if (result.ok) {
    if (type === 'mutation') ctx.storage.noteWriteCommitted();
    return result;
  }
  const fault = result.error ? databaseFault(result.error.cause) : null;
  if (fault === null) return result;
  ctx.storage.noteFault(fault);
  throw refuse(ctx, databaseFaultRefusal(fault), result.error!.cause);
}

/**
 * For procedures that need a valid API key (all of the contract's): the identity check
 * (src/api/refusals.ts, the same the surfaces make before reading a body), then the per-key rate
 * limit, then the procedure with the 503 mapping above. Both run before input validation, so a
 * caller without a key learns nothing about the input rules, and every call counts, on either
 * surface. One middleware, not three: tRPC copies the call's options at each one, a measurable
 * share of a small request.
 */
export const protectedProcedure = t.procedure.use(async ({ ctx, type, next }) => {
  const refusal = identityRefusal(ctx);
  if (refusal !== null) throw refuse(ctx, refusal);
  if (ctx.keyRateLimiter) {
    // The one place a request is counted against its key's budget, and refused past it.
    const taken = ctx.keyRateLimiter.take(ctx.identity!.keyId);
    const decision = taken instanceof Promise ? await taken : taken; // in memory: no extra tick
    ctx.rateLimit(decision, ctx.keyRateLimiter.windowMs);
    if (!decision.allowed) throw refuse(ctx, keyRateLimitRefusal(decision));
  }
  // No `ctx` to next(): tRPC would copy the whole context for it.
  return databaseFaultAs503(ctx, type, await next());
});

/**
 * The caller of a protectedProcedure (its middleware has refused every call without one). The
 * middleware does not narrow `ctx.identity` through next({ ctx }), which would copy the context.
 */
export function callerOf(ctx: Context): ApiKeyIdentity {
  const refusal = identityRefusal(ctx);
  if (refusal !== null) throw refuse(ctx, refusal);
  return ctx.identity!;
}
