// The API's operations, read from a router (the app's unless a test serves another): tests that
// cover every operation list them from here, so that a new procedure is covered without editing them.
import type { AnyTRPCRouter } from '@trpc/server';
import { appRouter } from '../../src/api/root-router.js';
import { trpcInternals } from '../../src/api/trpc-internals.js';
import { buildRestRoutes } from '../../src/http/rest-plugin.js';

export interface RestOperation {
  operationId: string;
  /** Its tag in the document (the first), e.g. `Pets`: Swagger UI groups by it. */
  tag: string;
  method: string;
  /** As in the document, e.g. `/pets/{petId}`. */
  path: string;
  /** The procedure behind it, e.g. `pets.get`. */
  procedure: string;
  successStatus: number;
}

/** Every REST operation of `router`, as its procedures' `openapi` metadata declares it. */
export function restOperations(router: AnyTRPCRouter = appRouter): RestOperation[] {
  return buildRestRoutes(router).map((route) => ({
    operationId: route.meta.openapi?.operationId ?? `${route.method} ${route.path}`,
    tag: route.meta.openapi?.tags?.[0] ?? 'default',
    method: route.method,
    path: route.path,
    procedure: route.procedure,
    successStatus: route.successStatus,
  }));
}

/** A request path of `operation` under /v1, each `{parameter}` given `value`. */
export function restPath(operation: Pick<RestOperation, 'path'>, value: string | number): string {
  return `/v1${operation.path.replace(/\{\w+\}/g, String(value))}`;
}

/** Every tRPC procedure of `router`: its path and whether it is a query or a mutation. */
export function trpcProcedures(router: AnyTRPCRouter = appRouter): Array<{ path: string; type: 'query' | 'mutation' | 'subscription' }> {
  return [...trpcInternals(router).procedures.values()].map(({ path, type }) => ({ path, type }));
}
