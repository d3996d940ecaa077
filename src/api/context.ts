// What every procedure receives, made whole per request by the factory below for either surface:
// who is calling, what the request asked for beyond its input, the data access it may use, and
// where to report what the answer says beyond its body. `Context` is the factory's return type.
// It holds no Fastify request and no Prisma client: plain per-request facts and injected services.
import type { IdempotencyStore } from '../idempotency/idempotency-store.js';
import { parseIdempotencyKey } from '../idempotency/idempotency-store.js';
import type { StorageHealth } from '../db/storage-health.js';
import type { LimitDecision, Limiter } from '../limits/fixed-window-limiter.js';
import type { PetRepository } from '../pets/pet-repository.js';
import type { CallerCheck } from './refusals.js';

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
interface ContextRequest extends CallerCheck {
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** A list's next page, as the input values that reach it. */
export type NextPageInput = Record<string, string | number | undefined>;

/**
 * How a surface writes what a procedure reports beyond the body onto its answer (`TAnswer`: the
 * surface's reply). The same for both surfaces; src/app.ts writes them as headers.
 */
export interface AnswerWriter<TAnswer> {
  /** The caller may try again in this many seconds (a 429 or 503): Retry-After. */
  retryAfter(answer: TAnswer, seconds: number): void;
  /** The per-key limit's decision for this call: the RateLimit headers. */
  rateLimit(answer: TAnswer, decision: LimitDecision, windowMs: number): void;
  /** An idempotent create replayed its first answer: `Idempotent-Replayed: true`. */
  replayed(answer: TAnswer): void;
}

/** A surface's link to a list's next page (REST: a `Link: <…>; rel="next"` header); tRPC has none. */
export type NextPageWriter<TAnswer> = (answer: TAnswer, input: NextPageInput) => void;

const noNextPageLink = (_input: NextPageInput): void => {};

/**
 * Makes `createContext(request, answer, nextPage?)`, the per-request context maker of both surfaces:
 * `answer` is the surface's reply, `nextPage` what that surface makes of a list's next page, given
 * when the context is made.
 */
export function contextFactory<TAnswer>({ pets, idempotency, keyRateLimiter, storage }: ContextServices, writer: AnswerWriter<TAnswer>) {
  return (request: ContextRequest, answer: TAnswer, nextPage?: NextPageWriter<TAnswer>) => ({
    /** The verified API key behind the request, or null when it had none or a bad one. */
    identity: request.identity,
    /** When the caller's address made too many failed attempts: seconds until it may try again. */
    authRetryAfterSeconds: request.authRetryAfterSeconds,
    /** The database could not check the caller's key: answered 503 (src/api/refusals.ts). */
    authFault: request.authFault,
    /** The request's Idempotency-Key header, parsed (only createPet uses it). */
    idempotencyKey: parseIdempotencyKey(request.headers['idempotency-key']),
    keyRateLimiter,
    storage,
    pets,
    idempotency,
    // What the answer says beyond its body, reported as facts; the surface writes them.
    retryAfter: (seconds: number): void => writer.retryAfter(answer, seconds),
    rateLimit: (decision: LimitDecision, windowMs: number): void => writer.rateLimit(answer, decision, windowMs),
    noteReplayed: (): void => writer.replayed(answer),
    /**
     * Says that a list has a next page, reached with these input values: REST answers with a
     * `Link: <…>; rel="next"` header to it; tRPC clients page with the input themselves (docs/api.md).
     */
    setNextPage: nextPage ? (input: NextPageInput): void => nextPage(answer, input) : noNextPageLink,
  });
}

/** A surface's per-request context maker. */
export type CreateContext<TAnswer> = ReturnType<typeof contextFactory<TAnswer>>;

/** What every procedure receives (`ctx`). */
export type Context = ReturnType<CreateContext<unknown>>;
