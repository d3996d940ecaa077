// What every procedure receives, made whole per request by the factory below for either surface:
// who is calling, what the request asked for beyond its input, the data access it may use, and
// where to report what the answer says beyond its body. `Context` is the factory's return type.
// It holds no Fastify request and no Prisma client: plain per-request facts and injected services.
import type { IdempotencyStore } from '../idempotency/idempotency-store.js';
import type { StorageHealth } from '../db/storage-health.js';
import type { LimitDecision, Limiter } from '../limits/fixed-window-limiter.js';
import type { PetRepository } from '../pets/pet-repository.js';
import { keyRefusal, refusedCaller, type Caller, type Refusal } from './refusals.js';

/** The services every request's procedures share, made once at start-up (src/app.ts). */
interface ContextServices {
  pets: PetRepository;
  idempotency: IdempotencyStore;
  /** Requests per API key; null when the limit is off. */
  keyRateLimiter: Limiter | null;
  /** Told of every write's outcome, so /readyz can report a full disk (src/db/storage-health.ts). */
  storage: StorageHealth;
}

/** What the factory reads of a request: authentication's findings and the headers (a Fastify request is one). */
interface ContextRequest {
  /** What was decided about the request before its procedure runs (src/http/call-pipeline.ts). */
  call: {
    /** Who is calling (src/http/authentication.ts decides). */
    readonly caller: Caller | null;
    /** The per-key limit's decision when the surface has already taken it for the whole request (a tRPC batch). */
    readonly budget: LimitDecision | null;
  };
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** A list's next page, as the input values that reach it. */
export type NextPageInput = Record<string, string | number | undefined>;

/**
 * How a surface writes what a procedure reports beyond the body onto its answer (`TAnswer`: the
 * surface's reply). Made once per surface (src/app.ts); a procedure calls it with `ctx.reply`.
 */
export interface AnswerWriter<TAnswer> {
  /** The call was refused (src/api/refusals.ts): recorded for the metrics and the log, and its Retry-After. */
  refused(answer: TAnswer, refusal: Refusal): void;
  /** The per-key limit's decision for this request: the RateLimit headers. */
  rateLimit(answer: TAnswer, decision: LimitDecision, windowMs: number): void;
  /** An idempotent create replayed its first answer: `Idempotent-Replayed: true`. */
  replayed(answer: TAnswer): void;
}

/**
 * A surface's link to a list's next page (REST: a `Link: <…>; rel="next"` header); tRPC has none.
 * Written as a method's type, so that a surface's writer fits `Context`, whose answer is `unknown`.
 */
export type NextPageWriter<TAnswer> = { write(answer: TAnswer, input: NextPageInput): void }['write'];

/** A request that reached no authentication (a context made by hand): as one that sent no key. */
const NO_KEY = refusedCaller(keyRefusal(false));

/**
 * Makes `createContext(request, answer, nextPage?)`, the per-request context maker of both surfaces:
 * `answer` is the surface's reply, `nextPage` what that surface makes of a list's next page, given
 * when the context is made. A plain object of facts and shared services: no closure per request.
 */
export function contextFactory<TAnswer>({ pets, idempotency, keyRateLimiter, storage }: ContextServices, writer: AnswerWriter<TAnswer>) {
  return (request: ContextRequest, answer: TAnswer, nextPage: NextPageWriter<TAnswer> | null = null) => ({
    /** Who is calling: the verified key, or why there is none (protectedProcedure narrows it to `identity`). */
    caller: request.call.caller ?? NO_KEY,
    /** The per-key limit's decision when already taken for the whole request; null: the middleware takes it. */
    budget: request.call.budget,
    /** The request's Idempotency-Key header as sent; createPet, its only reader, parses it (parseIdempotencyKey). */
    idempotencyKeyHeader: request.headers['idempotency-key'],
    keyRateLimiter,
    storage,
    pets,
    idempotency,
    /** The surface's answer, for `writer` and `nextPage`. */
    reply: answer,
    /** Writes what the answer says beyond its body (Retry-After, RateLimit, a replay), as the surface does. */
    writer,
    /**
     * Says that a list has a next page, reached with these input values: REST answers with a
     * `Link: <…>; rel="next"` header to it; tRPC clients page with the input themselves (docs/api.md).
     */
    nextPage,
  });
}

/** A surface's per-request context maker. */
export type CreateContext<TAnswer> = ReturnType<typeof contextFactory<TAnswer>>;

/** What every procedure receives (`ctx`). */
export type Context = ReturnType<CreateContext<unknown>>;
