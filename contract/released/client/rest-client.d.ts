import { type Client } from 'openapi-fetch';
import type { paths } from './rest-api.js';
export type AnimalStoreRestClient = Client<paths>;
/**
 * A typed REST client for the service at `baseUrl` (e.g. `http://127.0.0.1:3000`; the `/v1` prefix
 * is added), calling with `apiKey`. It does not retry: send an `Idempotency-Key` header with a
 * create (`params: { header: { 'Idempotency-Key': key } }`) to make your own retries safe.
 */
export declare function createRestClient(baseUrl: string, apiKey: string): AnimalStoreRestClient;
