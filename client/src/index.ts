// @animal-store/client: the typed clients of the Animal Store service (client/README.md).
//   createClient(baseUrl, apiKey): tRPC (/trpc), end-to-end types from AppRouter, safe retries;
//   createRestClient(baseUrl, apiKey): openapi-fetch on the REST surface (/v1) and its generated types.
// Failed tRPC calls are the app's own `TRPCClientError` (@trpc/client is a peer dependency).
import type { TRPCClientError } from '@trpc/client';
import type { AppRouter } from './app-router.js';
import type { RouterInputs, RouterOutputs } from './trpc-client.js';

export type { AppRouter };
export { createClient, type AnimalStoreClient, type ClientOptions, type RouterInputs, type RouterOutputs } from './trpc-client.js';
export { createRestClient, type AnimalStoreRestClient } from './rest-client.js';
export type { components as RestComponents, paths as RestPaths } from './rest-api.js';

/** A failed call of createClient's: `error.data.code` (`NOT_FOUND`…) and `error.data.httpStatus` typed. */
export type AnimalStoreClientError = TRPCClientError<AppRouter>;

/** What `error.data` of a failed call holds: `code`, `httpStatus`, and `zodError` (the issues by field, or null). */
export type AnimalStoreErrorData = NonNullable<AnimalStoreClientError['data']>;

// The domain's types, inferred from the router (so they follow it), for an app's own code.
/** A stored pet, as every operation returns it. */
export type Pet = RouterOutputs['pets']['create'];
/** `available`, `pending` or `sold`. */
export type PetStatus = Pet['status'];
/** What `pets.create` takes. */
export type NewPet = RouterInputs['pets']['create'];
/** What `pets.list` takes (`limit`, `status`, `after`), all optional; the call may also take none. */
export type ListPetsInput = Exclude<RouterInputs['pets']['list'], void | undefined>;
