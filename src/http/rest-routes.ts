// The REST route table, read from the procedures' `openapi` metadata, and the input rules that
// trpc-to-openapi leaves loose. The table lets the REST plugin answer what the library cannot:
// 405 with `Allow` for a known path, headers of deprecated operations on every response, and
// strict integers in query strings and paths.
//
// Coercion: trpc-to-openapi sets zod's `coerce` flag on every top-level number field of an input
// schema at its first REST call, JSON bodies included, and the flag stays on the shared schema,
// so the tRPC surface starts coercing too. Coercion is Number(), which makes `null` 0, `true` 1
// and "0x10" 16. Here, once at start-up, the flag is pinned: off for body fields (JSON has real
// numbers), on for query and path fields (they arrive as strings), and `strictParamProblem`
// makes sure that those strings are plain decimal integers before Number() ever sees them.
import type { AnyTRPCProcedure, AnyTRPCRouter } from '@trpc/server';
import type { ApiMeta } from '../api/trpc.js';

export interface RestRoute {
  method: string;
  /** The path as in the document, e.g. `/pets/{petId}`. */
  path: string;
  /** The procedure's path in the router, e.g. `pets.get`. */
  procedure: string;
  meta: ApiMeta;
  /** Input fields that arrive as strings (query or path parameters); empty for body methods. */
  params: ReadonlySet<string>;
  /** Those of them that are integers. */
  integerParams: ReadonlySet<string>;
  pattern: RegExp;
}

export interface RouteMatch {
  /** The route for this method and path, if any. */
  route?: RestRoute;
  /** The values of the path's `{parameters}`, undecoded. */
  pathParams: Record<string, string>;
  /** Every method the path answers to (empty for an unknown path). */
  allowedMethods: string[];
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

type ZodLike = { _zod: { def: { type: string; coerce?: boolean; innerType?: ZodLike; shape?: Record<string, ZodLike> } } };

/** Looks through optional/default/prefault/nullable wrappers to the schema that parses the value. */
function unwrap(schema: ZodLike): ZodLike {
  let current = schema;
  while (current._zod.def.innerType && ['optional', 'default', 'prefault', 'nullable'].includes(current._zod.def.type)) {
    current = current._zod.def.innerType;
  }
  return current;
}

const COERCIBLE = new Set(['number', 'bigint', 'boolean', 'date']);

/** Fixes `coerce` on the field's schema for good: later assignments (the library's) are ignored. */
function pinCoercion(field: ZodLike, coerce: boolean): void {
  Object.defineProperty(field._zod.def, 'coerce', { get: () => coerce, set: () => {}, configurable: true });
}

function inputFields(procedure: AnyTRPCProcedure): Record<string, ZodLike> {
  const inputs = (procedure._def as unknown as { inputs?: ZodLike[] }).inputs ?? [];
  const fields: Record<string, ZodLike> = {};
  for (const input of inputs) Object.assign(fields, unwrap(input)._zod.def.shape ?? {});
  return fields;
}

function pathPattern(path: string): RegExp {
  const source = path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, '(?<$1>[^/]+)');
  return new RegExp(`^${source}/?$`);
}

/** Builds the table from the router, pinning input coercion as described at the top. */
export function buildRestRoutes(router: AnyTRPCRouter): RestRoute[] {
  const routes: RestRoute[] = [];
  const procedures = router._def.procedures as Record<string, AnyTRPCProcedure>;
  for (const [name, procedure] of Object.entries(procedures)) {
    const meta = (procedure._def.meta ?? {}) as ApiMeta;
    if (!meta.openapi || meta.openapi.enabled === false) continue;
    const { method, path } = meta.openapi;
    const fromString = !BODY_METHODS.has(method);
    const params = new Set<string>();
    const integerParams = new Set<string>();
    for (const [key, schema] of Object.entries(inputFields(procedure))) {
      const field = unwrap(schema);
      if (fromString) params.add(key);
      if (!COERCIBLE.has(field._zod.def.type)) continue;
      pinCoercion(field, fromString);
      if (fromString && field._zod.def.type === 'number') integerParams.add(key);
    }
    routes.push({ method, path, procedure: name, meta, params, integerParams, pattern: pathPattern(path) });
  }
  return routes;
}

/** Finds the route for a path relative to /v1 (no query string). */
export function matchRoute(routes: readonly RestRoute[], method: string, path: string): RouteMatch {
  const allowedMethods: string[] = [];
  let found: RouteMatch['route'];
  let pathParams: Record<string, string> = {};
  for (const route of routes) {
    const match = route.pattern.exec(path);
    if (!match) continue;
    allowedMethods.push(route.method);
    if (route.method === method) {
      found = route;
      pathParams = { ...match.groups };
    }
  }
  return { route: found, pathParams, allowedMethods };
}

const DECIMAL_INTEGER = /^-?\d{1,20}$/;

/**
 * What is wrong with the query and path parameters of a matched request, or null. Integers must
 * be written in plain decimal digits (no spaces, signs other than -, hex, exponents or decimals);
 * a query parameter may appear once and, when it appears, not empty (trpc-to-openapi would drop
 * `?status=` silently and list everything). Ranges and enums are left to the procedure's schema.
 */
export function strictParamProblem(
  route: RestRoute,
  pathParams: Record<string, string>,
  query: Record<string, unknown>,
): string | null {
  for (const [name, value] of Object.entries(query)) {
    if (Array.isArray(value)) return `${name}: must be given once`;
    if (value === '' && route.params.has(name)) return `${name}: must not be empty`;
  }
  for (const name of route.integerParams) {
    const value = pathParams[name] ?? query[name];
    if (value !== undefined && !(typeof value === 'string' && DECIMAL_INTEGER.test(value))) {
      return `${name}: must be an integer`;
    }
  }
  return null;
}
