// What every procedure receives (`Context`), made per request for either surface: plain per-request
// facts and injected services, no Fastify request and no Prisma client.
import type { IdempotencyStore } from '../idempotency/idempotency-store.js';
import type { StorageHealth } from '../db/storage-health.js';
import type { LimitDecision, Limiter } from '../limits/fixed-window-limiter.js';
import type { PetRepository } from '../pets/pet-repository.js';
import { keyRefusal, refusedCaller, type Caller, type Refusal } from './refusals.js';

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
    /** The per-key limit's decision when the surface took it for the whole request (a tRPC batch); null: the middleware takes it. */
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
