import type { Operation, TRPCClientError } from '@trpc/client';
import type { AppRouter } from './app-router.js';
export interface RetryPolicy {
    /** Retries after the first attempt; 0 turns retrying off. */
    retries: number;
    /** The longest wait before a retry: a Retry-After asking for more is not waited for, and the call fails. */
    maxRetryDelayMs: number;
}
export declare const DEFAULT_RETRY_POLICY: RetryPolicy;
/** Where createClient keeps a mutation's Idempotency-Key: `op.context[IDEMPOTENCY_KEY_CONTEXT]`. */
export declare const IDEMPOTENCY_KEY_CONTEXT = "idempotencyKey";
/**
 * How long to wait before attempt `attempts + 1` of `op`, which failed with `error` on attempt
 * `attempts`; null when it must not be retried.
 */
export declare function retryDelayMs(op: Operation, error: TRPCClientError<AppRouter>, attempts: number, policy: RetryPolicy): number | null;
