// createRestClient: openapi-fetch on the REST surface's generated types (./rest-api.ts), for code
// that calls /v1 rather than /trpc. Every answer is `{ data, error, response }`; `error` is typed as
// the error envelope `{ code, message, status }` of the operation's documented statuses.
import createFetchClient, { type Client } from 'openapi-fetch';
import { bearerAuthorization } from './api-key.js';
import type { paths } from './rest-api.js';

export type AnimalStoreRestClient = Client<paths>;

/**
 * A typed REST client for the service at `baseUrl` (e.g. `http://127.0.0.1:3000`; the `/v1` prefix
 * is added), calling with `apiKey`. It does not retry: send an `Idempotency-Key` header with a
 * create (`params: { header: { 'Idempotency-Key': key } }`) to make your own retries safe.
 * `null` sends no key (a server in front adds it); an empty or missing `apiKey` throws a TypeError at once.
 */
export function createRestClient(baseUrl: string, apiKey: string | null): AnimalStoreRestClient {
  const authorization = bearerAuthorization(apiKey, 'createRestClient');
  return createFetchClient<paths>({
    baseUrl: `${baseUrl.replace(/\/+$/, '')}/v1`,
    ...(authorization === null ? {} : { headers: { Authorization: authorization } }),
  });
}
