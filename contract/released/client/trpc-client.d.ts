import { type TRPCClient } from '@trpc/client';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from './app-router.js';
/** What each procedure takes, e.g. `RouterInputs['pets']['create']`. */
export type RouterInputs = inferRouterInputs<AppRouter>;
/** What each procedure returns, e.g. `RouterOutputs['pets']['list']` (an array of pets). */
export type RouterOutputs = inferRouterOutputs<AppRouter>;
export type AnimalStoreClient = TRPCClient<AppRouter>;
export interface ClientOptions {
    /**
     * Retries of a call that got no answer (network failure, connection closed) or a 503 or 429:
     * at most this many after the first attempt (default 3; 0 turns retrying off).
     */
    retries?: number;
    /**
     * The longest wait before a retry, in ms (default 10 000). The wait is the answer's Retry-After
     * when it has one, else a backoff from 200 ms doubling at each attempt. A Retry-After asking for
     * more is not waited for: the call fails with that answer at once.
     */
    maxRetryDelayMs?: number;
}
/**
 * A tRPC client for the service at `baseUrl` (e.g. `http://127.0.0.1:3000`), calling with
 * `apiKey`. Queries made in the same tick go out batched: at most 50 calls and an 8 KiB URL per
 * HTTP request, so a batch of any size is split into requests the server accepts. Mutations go
 * one per request, each with its own Idempotency-Key. Calls that got no answer, or a 503 or 429,
 * are retried (see ClientOptions); a create retried this way creates one pet.
 */
export declare function createClient(baseUrl: string, apiKey: string, options?: ClientOptions): AnimalStoreClient;
