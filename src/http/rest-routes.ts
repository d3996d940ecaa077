// The REST route table, read from the procedures' `openapi` metadata, and the input rules that
// trpc-to-openapi's conventions leave loose. No coercion: query and path values are strings, integers
// must be plain digits (`strictParamProblem`) and `restInput` makes them numbers, so `null` is never 0.
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
  procedure: string;
  meta: ApiMeta;
  successStatus: number;
  /** Every method served at this route's path (a 405's `Allow`): HEAD wherever GET is. */
  allow: readonly string[];
  /** Input fields that arrive as strings (query or path parameters); empty for body methods. */
  params: ReadonlySet<string>;
  /** Those of them that are numbers, read as integers. */
  integerParams: ReadonlySet<string>;
  /** Each input field's description, for the document's parameters. */
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
 * The one percent-decoding rule of the REST paths (docs/decisions.md): an encoded unreserved character (RFC 3986 §2.3)
 * is that character; any other encoding stays as sent, so it never matches a literal segment nor makes an integer.
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

/** The methods a path relative to /v1 (decoded, no query) answers to, for a 405's `Allow`; none if unknown. */
export function allowedMethods(routes: readonly RestRoute[], path: string): readonly string[] {
  return routes.find((route) => route.pattern.test(path))?.allow ?? [];
}

/** The deprecation headers of the operation `method` and `path` name, for answers written outside the surface (src/app.ts). */
export function deprecationHeadersAt(routes: readonly RestRoute[], method: string, path: string): Readonly<Record<string, string>> {
  const decoded = decodeUnreserved(path);
  const route = routes.find(
    (route) => (route.method === method || (route.method === 'GET' && method === 'HEAD')) && route.pattern.test(decoded),
  );
  return (route && deprecationHeadersOf([route.meta])) ?? {};
}

const DECIMAL_INTEGER = /^-?\d+$/;

/** What is wrong with the parameters, or null: integers in plain digits; each at most once, not empty (`?status=` must not list all). */
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

/** The input, integers as numbers: a long digit string is a large one (json-text.ts), so the schema's range check speaks. */
export function restInput(route: RestRoute, pathParams: Record<string, string>, query: Record<string, unknown>): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const name of route.params) {
    const value = pathParams[name] ?? query[name];
    if (value === undefined) continue;
    input[name] = route.integerParams.has(name) ? integerFromDigits(value as string) : value;
  }
  return input;
}
