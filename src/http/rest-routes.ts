// The REST route table, read from the procedures' `openapi` metadata, and the input rules that
// trpc-to-openapi's conventions leave loose. The REST plugin (rest-plugin.ts) serves every route of
// this table itself, calling the procedure directly, and uses it for what the library cannot:
// 405 with `Allow` for a known path, headers of deprecated operations on every response, and
// strict integers in query strings and paths.
//
// No coercion: query and path values arrive as strings, `strictParamProblem` makes sure integers
// are plain decimal digits, and `restInput` turns those into numbers before the schema sees them.
// The shared schemas never coerce (trpc-to-openapi switches zod's `coerce` on only in its own
// request handler, which this service does not load), so neither surface turns `null` into 0.
import type { AnyTRPCRouter } from '@trpc/server';
import { z } from 'zod';
import { trpcInternals, type ProcedureInfo } from '../api/trpc-internals.js';
import type { ApiMeta } from '../api/meta.js';
import { integerFromDigits } from '../domain/json-text.js';
import { deprecationHeadersOf } from './deprecation-headers.js';

export interface RestRoute {
  method: string;
  /** The path as in the document, e.g. `/pets/{petId}`. */
  path: string;
  /** The procedure's path in the router, e.g. `pets.get`. */
  procedure: string;
  meta: ApiMeta;
  /** The status of a success (the procedure's `successStatus` meta, else 200). */
  successStatus: number;
  /** Every method served at this route's path (its 405's `Allow`): HEAD wherever GET is (RFC 9110 §9.3.2). */
  allow: readonly string[];
  /** Input fields that arrive as strings (query or path parameters); empty for body methods. */
  params: ReadonlySet<string>;
  /** Those of them that are integers. */
  integerParams: ReadonlySet<string>;
  /** The description of each input field, from its schema's metadata (for the document's parameters). */
  paramDescriptions: Readonly<Record<string, string>>;
  pattern: RegExp;
  /** The path in Fastify's syntax, e.g. `/pets/:petId`. */
  fastifyPath: string;
}

/** The methods whose input is the JSON body; the others' input is the query and path parameters. */
export const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** Looks through optional/default/prefault/nullable wrappers to the schema that parses the value. */
function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  while (
    current instanceof z.ZodOptional ||
    current instanceof z.ZodDefault ||
    current instanceof z.ZodPrefault ||
    current instanceof z.ZodNullable
  ) {
    current = current.unwrap() as z.ZodType;
  }
  return current;
}

/** The fields of a procedure's object inputs (the only kind a REST route can carry), by name. */
function inputFields(procedure: ProcedureInfo): Record<string, z.ZodType> {
  const fields: Record<string, z.ZodType> = {};
  for (const input of procedure.inputs) {
    const object = input instanceof z.ZodType ? unwrap(input) : undefined;
    if (object instanceof z.ZodObject) Object.assign(fields, object.shape);
  }
  return fields;
}

function pathPattern(path: string): RegExp {
  const source = path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, '(?<$1>[^/]+)');
  return new RegExp(`^${source}/?$`);
}

/** Builds the table from the router. */
export function buildRestRoutes(router: AnyTRPCRouter): RestRoute[] {
  const routes: RestRoute[] = [];
  for (const [name, procedure] of trpcInternals(router).procedures) {
    const meta = procedure.meta;
    if (!meta.openapi || meta.openapi.enabled === false) continue;
    const { method, path } = meta.openapi;
    const fromString = !BODY_METHODS.has(method);
    const params = new Set<string>();
    const integerParams = new Set<string>();
    const paramDescriptions: Record<string, string> = {};
    for (const [key, schema] of Object.entries(inputFields(procedure))) {
      const field = unwrap(schema);
      const description = schema.description ?? field.description;
      if (description) paramDescriptions[key] = description;
      if (fromString) params.add(key);
      if (fromString && field instanceof z.ZodNumber) integerParams.add(key);
    }
    const fastifyPath = path.replace(/\{(\w+)\}/g, ':$1');
    routes.push({
      method,
      path,
      procedure: name,
      meta,
      successStatus: meta.successStatus ?? 200,
      allow: [],
      params,
      integerParams,
      paramDescriptions,
      pattern: pathPattern(path),
      fastifyPath,
    });
  }
  for (const route of routes) {
    route.allow = routes
      .filter((other) => other.path === route.path)
      .flatMap((other) => (other.method === 'GET' ? ['GET', 'HEAD'] : [other.method]));
  }
  return routes;
}

/**
 * The one percent-decoding rule of the REST paths (docs/decisions.md), for every segment alike:
 * a percent-encoded unreserved character (RFC 3986 §2.3: letters, digits, `-._~`) is that
 * character (§6.2.2.2: the URIs are equivalent), so `/v1/%70ets/%31` is `/v1/pets/1`; every other
 * percent-encoding (`%2F`, `%20`, `%25`…) stays as sent, so it never matches a literal segment and
 * is never part of an integer. Fastify's router already matches literal segments this way.
 */
export function decodeUnreserved(path: string): string {
  if (!path.includes('%')) return path;
  return path.replace(/%([0-9A-Fa-f]{2})/g, (encoded, hex: string) => {
    const character = String.fromCharCode(Number.parseInt(hex, 16));
    return /^[A-Za-z0-9\-._~]$/.test(character) ? character : encoded;
  });
}

/** A path with an empty segment (`/pets//`, `//pets`) names no resource. */
export function hasEmptySegment(path: string): boolean {
  return path.includes('//');
}

/**
 * Every method a path relative to /v1 answers to (no query string, `decodeUnreserved` applied;
 * empty for an unknown path), for 405's `Allow`. HEAD goes wherever GET does (RFC 9110 §9.3.2).
 */
export function allowedMethods(routes: readonly RestRoute[], path: string): readonly string[] {
  return routes.find((route) => route.pattern.test(path))?.allow ?? [];
}

/**
 * The deprecation headers of the operation `method` and `path` (relative to /v1, no query string)
 * name, for answers written outside the REST surface (Node's parser's: src/app.ts); none for any other.
 */
export function deprecationHeadersAt(routes: readonly RestRoute[], method: string, path: string): Readonly<Record<string, string>> {
  const decoded = decodeUnreserved(path);
  const route = routes.find(
    (route) => (route.method === method || (route.method === 'GET' && method === 'HEAD')) && route.pattern.test(decoded),
  );
  return (route && deprecationHeadersOf([route.meta])) ?? {};
}

const DECIMAL_INTEGER = /^-?\d+$/;

/**
 * What is wrong with the query and path parameters of a matched request, or null. Integers must
 * be written in plain decimal digits (no spaces, signs other than -, hex, exponents or decimals);
 * a query parameter may appear once and, when it appears, not empty (trpc-to-openapi would drop
 * `?status=` silently and list everything). Ranges and enums are left to the procedure's schema.
 */
export function strictParamProblem(route: RestRoute, pathParams: Record<string, string>, query: Record<string, unknown>): string | null {
  for (const name in query) {
    // Unknown parameters are ignored (spec), repeated or not.
    const value = query[name];
    if (Array.isArray(value) && route.params.has(name)) return `${name}: must be given once`;
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

/**
 * The procedure input of a GET request whose parameters passed `strictParamProblem`: the route's
 * query and path parameters (others are ignored), integers as numbers. A long digit string is a
 * large number, however long (src/domain/json-text.ts), so the schema's range check speaks: "must
 * be at most …".
 */
export function restInput(route: RestRoute, pathParams: Record<string, string>, query: Record<string, unknown>): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const name of route.params) {
    const value = pathParams[name] ?? query[name];
    if (value === undefined) continue;
    input[name] = route.integerParams.has(name) ? integerFromDigits(value as string) : value;
  }
  return input;
}
