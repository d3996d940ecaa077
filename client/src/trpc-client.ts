// createClient: the typed tRPC client of /trpc, built from tRPC's own links only.
//
//   idempotency keys → retryLink → splitLink ┬ mutations: httpLink (one call per request, its own Idempotency-Key)
//                                            └ queries:   httpBatchLink (batched, split below the server's limits)
//
// The Idempotency-Key is given to each mutation before the retries, so every attempt of one call
// sends the same key and the server replays its first answer instead of creating twice. The key is
// a header, one per HTTP request, so mutations are not batched.
import { createTRPCClient, httpBatchLink, httpLink, retryLink, splitLink, type TRPCClient, type TRPCLink } from '@trpc/client';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { CLIENT_MAX_BATCH_ITEMS, CLIENT_MAX_URL_LENGTH } from '../../src/http/request-head-limits.js';
import { bearerAuthorization } from './api-key.js';
import type { AppRouter } from './app-router.js';
import { DEFAULT_RETRY_POLICY, IDEMPOTENCY_KEY_CONTEXT, retryDelayMs, type RetryPolicy } from './retries.js';

/** What each procedure takes, e.g. `RouterInputs['pets']['create']`. */
export type RouterInputs = inferRouterInputs<AppRouter>;
/** What each procedure returns, e.g. `RouterOutputs['pets']['list']` (an array of pets). */
export type RouterOutputs = inferRouterOutputs<AppRouter>;

export type AnimalStoreClient = TRPCClient<AppRouter>;

export interface ClientOptions {
  /**
   * Retries of a call that got a 503 or 429: at most this many after the first attempt (default 3;
   * 0 turns retrying off). A call that got no answer at all (network failure, connection closed,
   * or, in a browser, a cross-origin refusal, which looks the same) is retried once at most.
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
 * Gives each mutation an Idempotency-Key (a random UUID) unless the caller set one in the call's
 * context: `api.pets.create.mutate(input, { context: { idempotencyKey: 'order-7431' } })`.
 */
function idempotencyKeyLink(): TRPCLink<AppRouter> {
  return () =>
    ({ op, next }) => {
      if (op.type !== 'mutation' || typeof op.context[IDEMPOTENCY_KEY_CONTEXT] === 'string') return next(op);
      return next({ ...op, context: { ...op.context, [IDEMPOTENCY_KEY_CONTEXT]: crypto.randomUUID() } });
    };
}

/** tRPC's retryLink with the policy of ./retries.ts: the delay it decides is the one waited. */
function retryOnTransientFailure(policy: RetryPolicy): TRPCLink<AppRouter> {
  // retryLink asks `retry` whether to retry, then, in the same callback, `retryDelayMs` for how
  // long to wait; only the former sees the error (and its Retry-After), so it hands the delay over.
  let decidedDelayMs = 0;
  return retryLink<AppRouter>({
    retry({ op, error, attempts }) {
      const delay = retryDelayMs(op, error, attempts, policy);
      decidedDelayMs = delay ?? 0;
      return delay !== null;
    },
    retryDelayMs: () => decidedDelayMs,
  });
}

/**
 * `fetch`, with a failure to get any answer explained: the service is down or unreachable, or, for
 * a page on another origin, refused that origin (a browser tells the page nothing more: the
 * developer tools show the service's answer to the preflight, which names CORS_ORIGINS).
 */
function explainingFetch(url: string): typeof fetch {
  return async (input, init) => {
    try {
      return await fetch(input, init);
    } catch (error) {
      if (!(error instanceof TypeError) || init?.signal?.aborted) throw error;
      throw new TypeError(noAnswerMessage(url, error.message), { cause: error });
    }
  };
}

/** The message of a call that got no answer: what the app shows (client/README.md, "In a web app"). */
function noAnswerMessage(url: string, reason: string): string {
  const page = (globalThis as { location?: { origin?: unknown } }).location?.origin;
  const crossOrigin = typeof page === 'string' && page !== 'null' && new URL(url, page).origin !== page;
  return (
    `No answer from ${url} (${reason}): the service is down or unreachable` +
    (crossOrigin ? `, or it does not allow this page's origin ${page}: the service's CORS_ORIGINS must list it` : '')
  );
}

/**
 * A tRPC client for the service at `baseUrl` (e.g. `http://127.0.0.1:3000`), calling with
 * `apiKey`. Queries made in the same tick go out batched: at most 50 calls and an 8 KiB URL per
 * HTTP request, so a batch of any size is split into requests the server accepts. Mutations go
 * one per request, each with its own Idempotency-Key. Calls that got no answer, or a 503 or 429,
 * are retried (see ClientOptions); a create retried this way creates one pet. `apiKey` `null` sends
 * no key: a server in front of the service adds it (a web app's own server, client/README.md). An
 * empty or missing `apiKey` throws a TypeError at once, whose message an app can show.
 */
export function createClient(baseUrl: string, apiKey: string | null, options: ClientOptions = {}): AnimalStoreClient {
  const url = `${baseUrl.replace(/\/+$/, '')}/trpc`;
  const authorization = bearerAuthorization(apiKey, 'createClient');
  const auth: Record<string, string> = authorization === null ? {} : { authorization };
  const fetchExplained = explainingFetch(url);
  const policy: RetryPolicy = {
    retries: options.retries ?? DEFAULT_RETRY_POLICY.retries,
    maxRetryDelayMs: options.maxRetryDelayMs ?? DEFAULT_RETRY_POLICY.maxRetryDelayMs,
  };
  return createTRPCClient<AppRouter>({
    links: [
      idempotencyKeyLink(),
      retryOnTransientFailure(policy),
      splitLink({
        condition: (op) => op.type === 'mutation',
        true: httpLink({
          url,
          fetch: fetchExplained,
          headers: ({ op }) => {
            const key = op.context[IDEMPOTENCY_KEY_CONTEXT];
            return typeof key === 'string' ? { ...auth, 'idempotency-key': key } : auth;
          },
        }),
        false: httpBatchLink({
          url,
          fetch: fetchExplained,
          headers: auth,
          maxURLLength: CLIENT_MAX_URL_LENGTH,
          maxItems: CLIENT_MAX_BATCH_ITEMS,
        }),
      }),
    ],
  });
}
