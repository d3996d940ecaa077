// The only place that calls initTRPC. It exports the building blocks the routers and their callers use.
import { initTRPC, type TRPCError } from '@trpc/server';
import { databaseFault } from '../db/database-errors.js';
import type { Context } from './context.js';
import { formatTrpcError, trpcErrorOfRefusal, trpcErrorOfServiceError } from './errors.js';
import type { ApiMeta } from './meta.js';
import { databaseFaultRefusal, keyRateLimitRefusal, type Refusal } from './refusals.js';

const t = initTRPC.context<Context>().meta<ApiMeta>().create({
  // Never put stack traces in responses, whatever NODE_ENV says.
  isDev: false,
  // What a caller may see of an error (src/api/errors.ts shapes every error answer).
  errorFormatter: formatTrpcError,
});

/** Builds a router; one per domain (src/api/pets-router.ts), merged in src/api/root-router.ts. */
export const router = t.router;

/** Calls the router's procedures in-process, as over HTTP but without a socket (test/api/ uses it). */
export const createCallerFactory = t.createCallerFactory;

/** A refusal thrown from a procedure, told to the surface (recorded for the metrics and the log, Retry-After). */
function refuse(ctx: Context, refusal: Refusal, cause?: unknown): TRPCError {
  ctx.writer.refused(ctx.reply, refusal);
  return trpcErrorOfRefusal(refusal, cause);
}

/**
 * A call's failure as both surfaces answer it: a database fault its 503, a DomainError its status. Every
 * outcome of a mutation is told to the storage health (/readyz).
 */
function mapFailure<T extends { ok: boolean; error?: TRPCError }>(ctx: Context, type: string, result: T): T {
  if (result.ok) {
    if (type === 'mutation') ctx.storage.noteWriteCommitted();
    return result;
  }
  const cause = result.error?.cause;
  const fault = cause === undefined ? null : databaseFault(cause);
  if (fault !== null) {
    ctx.storage.noteFault(fault);
    throw refuse(ctx, databaseFaultRefusal(fault), cause);
  }
  const mapped = trpcErrorOfServiceError(cause);
  if (mapped) throw mapped;
  return result;
}

/**
 * For procedures that need a valid API key: the caller's refusal, then the per-key limit (once per call,
 * unless the surface took it for the whole request: `ctx.budget`). Both run before input validation, so a
 * caller without a key learns nothing about the input rules, and every call counts. `ctx.identity` is the caller.
 */
export const protectedProcedure = t.procedure.use(async ({ ctx, type, next }) => {
  const { identity, refusal } = ctx.caller;
  if (identity === null) throw refuse(ctx, refusal);
  const limiter = ctx.keyRateLimiter;
  let budget = ctx.budget;
  if (budget === null && limiter !== null) {
    const taken = limiter.take(identity.keyId);
    budget = taken instanceof Promise ? await taken : taken; // in memory: no extra tick
    ctx.writer.rateLimit(ctx.reply, budget, limiter.windowMs);
  }
  if (budget !== null && !budget.allowed) throw refuse(ctx, keyRateLimitRefusal(budget));
  return mapFailure(ctx, type, await next({ ctx: { identity } }));
});
