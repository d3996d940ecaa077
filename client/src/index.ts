// The client entry for TypeScript apps (package export `animal-store/client`):
//   createClient(baseUrl, apiKey): the typed tRPC client of /trpc, with end-to-end types from
//     the AppRouter type: inputs checked at compile time, outputs typed, no code generation;
//   RestPaths: the REST surface's types, for openapi-fetch (`createClient<RestPaths>` there).
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from '../api/root-router.js';
import { CLIENT_MAX_BATCH_ITEMS, CLIENT_MAX_URL_LENGTH } from '../http/request-limits.js';

export type { AppRouter };
export type { components as RestComponents, paths as RestPaths } from './rest-api.js';

/** What each procedure takes, e.g. `RouterInputs['pets']['create']`. */
export type RouterInputs = inferRouterInputs<AppRouter>;
/** What each procedure returns, e.g. `RouterOutputs['pets']['get']` (a Pet). */
export type RouterOutputs = inferRouterOutputs<AppRouter>;

/**
 * A tRPC client for the service at `baseUrl` (e.g. `http://127.0.0.1:3000`), calling with
 * `apiKey`. Calls made in the same tick go out batched: up to 50 calls and an 8 KiB URL per HTTP
 * request, so a batch of any size is split into requests the server accepts
 * (src/http/request-limits.ts).
 */
export function createClient(baseUrl: string, apiKey: string) {
  return createTRPCClient<AppRouter>({
    links: [
      httpBatchLink({
        url: `${baseUrl.replace(/\/+$/, '')}/trpc`,
        headers: { authorization: `Bearer ${apiKey}` },
        maxURLLength: CLIENT_MAX_URL_LENGTH,
        maxItems: CLIENT_MAX_BATCH_ITEMS,
      }),
    ],
  });
}

export type AnimalStoreClient = ReturnType<typeof createClient>;
