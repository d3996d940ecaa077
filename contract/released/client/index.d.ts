import type { TRPCClientError } from '@trpc/client';
import type { AppRouter } from './app-router.js';
export type { AppRouter };
export { createClient, type AnimalStoreClient, type ClientOptions, type RouterInputs, type RouterOutputs } from './trpc-client.js';
export { createRestClient, type AnimalStoreRestClient } from './rest-client.js';
export type { components as RestComponents, paths as RestPaths } from './rest-api.js';
/** A failed call of createClient's: `error.data.code` (`NOT_FOUND`…) and `error.data.httpStatus` typed. */
export type AnimalStoreClientError = TRPCClientError<AppRouter>;
