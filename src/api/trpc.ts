// The procedures' building blocks, laid out as create-t3-app's server/api/trpc.ts: (1) what every
// procedure receives (`Context`), made per request for either surface from plain per-request facts and
// injected services, no Fastify request and no Prisma client; (2) the only initTRPC; (3) the router,
// caller factory and procedures the routers and their callers use.
import { initTRPC, type TRPCError } from '@trpc/server';
import { databaseFault } from '../db/database-errors.js';
import type { PetRepository } from '../db/sql.js';
import type { StorageHealth } from '../db/storage-health.js';
import type { IdempotencyStore } from '../idempotency/idempotency-store.js';
import type { LimitDecision, Limiter } from '../limits/fixed-window-limiter.js';
import { formatTrpcError, trpcErrorOfRefusal, trpcErrorOfServiceError } from './errors.js';
import type { ApiMeta } from './meta.js';
import { databaseFaultRefusal, keyRateLimitRefusal, keyRefusal, refusedCaller, type Caller, type Refusal } from './refusals.js';

// 1. The context.

/** The services every request's procedures share, made once at start-up. */
interface ContextServices {
  pets: PetRepository;
  idempotency: IdempotencyStore;
  /** Requests per API key; null when the limit is off. */
  keyRateLimiter: Limiter | null;
  /** Told of every write's outcome, so /readyz can report a full disk. */
  storage: StorageHealth;
}

/** What the factory reads of a request (a Fastify request is one); `call` is decided before the procedure runs. */
interface ContextRequest {
  call: {
    readonly caller: Caller | null;
    readonly budget: LimitDecision | null;
  };
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

export type NextPageInput = Record<string, string | number | undefined>;

/** How a surface writes what a procedure reports beyond the body onto its reply (`TAnswer`), given `ctx.reply`. */
export interface AnswerWriter<TAnswer> {
  /** Recorded for the metrics and the log, and its Retry-After. */
  refused(answer: TAnswer, refusal: Refusal): void;
  /** The RateLimit headers. */
  rateLimit(answer: TAnswer, decision: LimitDecision, windowMs: number): void;
  /** `Idempotent-Replayed: true`. */
  replayed(answer: TAnswer): void;
}

/**
 * A surface's link to a list's next page (REST: a `Link` header); tRPC has none. A method's type,
 * so that a surface's writer fits `Context`, whose answer is `unknown`.
 */
export type NextPageWriter<TAnswer> = { write(answer: TAnswer, input: NextPageInput): void }['write'];

/** A request that reached no authentication (a context made by hand): as one that sent no key. */
const NO_KEY = refusedCaller(keyRefusal(false));

/** Makes both surfaces' `createContext(request, reply, nextPage?)`: a plain object, no closure per request. */
export function contextFactory<TAnswer>({ pets, idempotency, keyRateLimiter, storage }: ContextServices, writer: AnswerWriter<TAnswer>) {
  return (request: ContextRequest, answer: TAnswer, nextPage: NextPageWriter<TAnswer> | null = null) => ({
    /** The verified key, or why there is none (protectedProcedure narrows it to `identity`). */
    caller: request.call.caller ?? NO_KEY,
    /** The per-key limit's decision, taken by the surface for the whole request (every HTTP call); null: the middleware takes it. */
    budget: request.call.budget,
    /** The Idempotency-Key header as sent; createPet parses it. */
    idempotencyKeyHeader: request.headers['idempotency-key'],
    keyRateLimiter,
    storage,
    pets,
    idempotency,
    reply: answer,
    writer,
    /** A list's next page, reached with these input values; tRPC clients page with the input themselves. */
    nextPage,
  });
}

export type CreateContext<TAnswer> = ReturnType<typeof contextFactory<TAnswer>>;

/** What every procedure receives (`ctx`). */
export type Context = ReturnType<CreateContext<unknown>>;

// 2. Initialization.

const t = initTRPC.context<Context>().meta<ApiMeta>().create({
  // Never put stack traces in responses, whatever NODE_ENV says.
  isDev: false,
  // What a caller may see of an error (src/api/errors.ts shapes every error answer).
  errorFormatter: formatTrpcError,
});

// 3. Routers and procedures.

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
 * For procedures that need a valid API key: the caller's refusal, then the per-key limit. Over HTTP the surface
 * took it for the whole request before the body was read (`ctx.budget`); only a call without HTTP (a
 * createCallerFactory caller) takes it here, once a call. Both run before input validation, so a caller
 * without a key learns nothing about the input rules, and every call counts. `ctx.identity` is the caller.
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
