// What every procedure receives: who is calling, what the request asked for beyond its input,
// and the data access it may use. Built per request by src/app.ts for both surfaces.
import type { ApiKeyIdentity } from '../auth/api-keys.js';
import type { IdempotencyStore } from '../idempotency/idempotency-store.js';
import type { DatabaseFault } from '../db/database-errors.js';
import type { StorageHealth } from '../db/storage-health.js';
import type { Limiter } from '../limits/fixed-window-limiter.js';
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
  /** Adds headers to the response, whichever surface it goes out on. */
  setHeaders(headers: Record<string, string>): void;
  pets: PetRepository;
  idempotency: IdempotencyStore;
}
