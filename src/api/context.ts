// What every procedure receives: who is calling, what the request asked for beyond its input,
// and the data access it may use. Built per request by src/app.ts for both surfaces.
import type { ApiKeyIdentity } from '../auth/api-keys.js';
import type { IdempotencyStore } from '../idempotency/idempotency-store.js';
import type { DatabaseFault } from '../db/database-errors.js';
import type { StorageHealth } from '../db/storage-health.js';
import type { LimitDecision, Limiter } from '../limits/fixed-window-limiter.js';
import type { PetRepository } from '../pets/pet-repository.js';

export interface Context {
  /** The verified API key behind the request, or null when it had none or a bad one. */
  identity: ApiKeyIdentity | null;
  /** When the caller's address made too many failed attempts: seconds until it may try again. */
  authRetryAfterSeconds: number;
  /** The request's Idempotency-Key header, parsed (only createPet uses it). */
  idempotencyKey: { key?: string; error?: string };
  /** The database could not check the caller's key: answered 503 (src/http/authentication.ts). */
  authFault: DatabaseFault | null;
  /** Requests per API key; null when the limit is off. */
  keyRateLimiter: Limiter | null;
  /** Told of every write's outcome, so /readyz can report a full disk (src/db/storage-health.ts). */
  storage: StorageHealth;
  // What the answer says beyond its body, reported as facts; the surfaces turn them into headers
  // (src/app.ts builds the context), the same on both.
  /** The caller may try again in this many seconds (a 429 or 503): Retry-After. */
  retryAfter(seconds: number): void;
  /** The per-key limit's decision for this call: the RateLimit headers (src/http/rate-limit-headers.ts). */
  rateLimit(decision: LimitDecision, windowMs: number): void;
  /** An idempotent create replayed its first answer: `Idempotent-Replayed: true`. */
  noteReplayed(): void;
  /**
   * Says that a list has a next page, reached with these input values: REST answers with a
   * `Link: <…>; rel="next"` header to it; tRPC clients page with the input themselves (docs/api.md).
   */
  setNextPage(input: Record<string, string | number | undefined>): void;
  pets: PetRepository;
  idempotency: IdempotencyStore;
}
