// The REST surface under /v1, a codec of the call pipeline: its route table, read from the procedures'
// `openapi` metadata, decodes a request into a call (strict parameters: query and path values are
// strings, integers plain digits and other numbers plain decimals, made numbers by `restInput`, so `null`
// is never 0; the JSON body by the integer rule) and encodes the answer (the route's success status, the
// error envelope). The key is checked and the budget taken before the body is read; 404/405, deprecation
// headers.
// A departure from trpc-to-openapi's handler: docs/architecture.md ("departures").
import { errorCodes, type FastifyPluginAsync, type FastifyReply, type FastifyRequest, type onRequestHookHandler } from 'fastify';
import { TRPCError, type AnyTRPCRouter } from '@trpc/server';
import { z } from 'zod';
import type { CreateContext, NextPageInput, NextPageWriter } from '../api/trpc.js';
import { answerForRefusal, answerForTRPCError } from '../api/errors.js';
import type { ApiMeta } from '../api/meta.js';
import { trpcInternals, type ProcedureInfo } from '../api/trpc-internals.js';
import { bodyText, integerFromDigits, parseJson } from '../domain/json-text.js';
import type { Limiter } from '../limits/fixed-window-limiter.js';
import {
  callerRefusal,
  refuseEarly,
  sendEnvelope,
  sendNoSuchResource,
  sendOrFail,
  sendUnknownRoute,
  takeBudget,
  type CallPipeline,
} from './call-pipeline.js';
import { REST_BASE_PATH } from './request-record.js';
import { deprecationHeadersOf } from './deprecation-headers.js';

// The route table.

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
  /** Those of them that are integers (plain digits), and the other numbers (plain decimals). */
  integerParams: ReadonlySet<string>;
  numberParams: ReadonlySet<string>;
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
    const numberParams = new Set<string>();
    const paramDescriptions: Record<string, string> = {};
    for (const [key, schema] of Object.entries(inputFields(procedure))) {
      const field = unwrap(schema);
      const description = schema.description ?? field.description;
      if (description) paramDescriptions[key] = description;
      if (fromString) params.add(key);
      if (fromString && field instanceof z.ZodNumber) (field.isInt ? integerParams : numberParams).add(key);
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
      numberParams,
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
function decodeUnreserved(path: string): string {
  if (!path.includes('%')) return path;
  return path.replace(/%([0-9A-Fa-f]{2})/g, (encoded, hex: string) => {
    const character = String.fromCharCode(Number.parseInt(hex, 16));
    return /^[A-Za-z0-9\-._~]$/.test(character) ? character : encoded;
  });
}

/** A path with an empty segment (`/pets//`, `//pets`) names no resource. */
function hasEmptySegment(path: string): boolean {
  return path.includes('//');
}

/** The methods a path relative to /v1 (decoded, no query) answers to, for a 405's `Allow`; none if unknown. */
function allowedMethods(routes: readonly RestRoute[], path: string): readonly string[] {
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
const DECIMAL_NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$/;

/** What is wrong with the parameters, or null: numbers in plain decimals; each at most once, not empty (`?status=` must not list all). */
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
  if (route.numberParams.size > 0) return numberParamProblem(route, pathParams, query);
  return null;
}

function numberParamProblem(route: RestRoute, pathParams: Record<string, string>, query: Record<string, unknown>): string | null {
  for (const name of route.numberParams) {
    const value = pathParams[name] ?? query[name];
    if (value !== undefined && !(typeof value === 'string' && DECIMAL_NUMBER.test(value))) return `${name}: must be a number`;
  }
  return null;
}

/** The input, integers as numbers: a long digit string is a large one (json-text.ts), so the schema's range check speaks. */
function restInput(route: RestRoute, pathParams: Record<string, string>, query: Record<string, unknown>): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const name of route.params) {
    const value = pathParams[name] ?? query[name];
    if (value === undefined) continue;
    if (route.integerParams.has(name)) input[name] = integerFromDigits(value as string);
    else input[name] = route.numberParams.has(name) ? Number(value) : value;
  }
  return input;
}

// The plugin.
export interface RestPluginOptions {
  /** buildRestRoutes of the router served. */
  routes: readonly RestRoute[];
  createContext: CreateContext<FastifyReply>;
  keyRateLimiter: Limiter | null;
  pipeline: CallPipeline;
}

/** The path relative to /v1, without the query, as sent (before `decodeUnreserved`). */
function relativePath(url: string): string {
  const path = url.slice(REST_BASE_PATH.length);
  const query = path.indexOf('?');
  return query === -1 ? path : path.slice(0, query);
}

/** The path's `{parameters}` by `decodeUnreserved`, not Fastify's `request.params` (which decode `%2F` too). */
function pathParams(route: RestRoute, request: FastifyRequest): Record<string, string> {
  if (!route.path.includes('{')) return {};
  const path = relativePath(request.url);
  // Without a percent-encoding both rules read the same segments: Fastify's are already parsed.
  if (!path.includes('%')) return request.params as Record<string, string>;
  return { ...route.pattern.exec(decodeUnreserved(path))?.groups };
}

/** A JSON body with Fastify's parser's errors and BOM rule, by the integer rule; `__proto__` is an own (unknown) field. */
function parseJsonBody(_request: FastifyRequest, body: string | Buffer, done: (error: Error | null, body?: unknown) => void): void {
  if (body.length === 0) return done(new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY(), undefined);
  let text: string;
  try {
    text = typeof body === 'string' ? body : bodyText(body);
  } catch (error) {
    return done(error as Error, undefined);
  }
  try {
    done(null, parseJson(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text));
  } catch {
    done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined);
  }
}

function bodyProblem(body: unknown): string | null {
  if (body === undefined) return 'body: is required (a JSON object)';
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'body: must be a JSON object';
  return null;
}

/** The JSON body, or the path and query parameters; `problem` when their shape is wrong. */
function rawInput(route: RestRoute, request: FastifyRequest): { input: unknown; problem: string | null } {
  if (BODY_METHODS.has(route.method)) return { input: request.body, problem: bodyProblem(request.body) };
  const params = pathParams(route, request);
  const query = request.query as Record<string, unknown>;
  const problem = strictParamProblem(route, params, query);
  return { input: problem === null ? restInput(route, params, query) : undefined, problem };
}

/** The RFC 8288 `Link` to a list's next page: its own path (no path parameters), the input as query. */
function nextPageLink(route: RestRoute, input: NextPageInput): string {
  // Percent-encoded pairs, not a URLSearchParams (docs/benchmarks.md, "Figures behind the code's choices").
  let query = '';
  for (const name in input) {
    const value = input[name];
    if (value !== undefined) query += `${query === '' ? '' : '&'}${encodeURIComponent(name)}=${encodeURIComponent(String(value))}`;
  }
  return `<${REST_BASE_PATH}${route.path}?${query}>; rel="next"`;
}

export const restPlugin: FastifyPluginAsync<RestPluginOptions> = async (v1, { routes, createContext, keyRateLimiter, pipeline }) => {
  // JSON is the only body read (other types: 415). Not Fastify's parser, which rounds numbers and calls
  // `__proto__` invalid JSON; as bytes, decoded strictly, where Fastify's string would hold U+FFFD.
  v1.removeContentTypeParser('text/plain');
  v1.removeContentTypeParser('application/json');
  v1.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJsonBody);

  // Unknown paths, and known paths with another method (OPTIONS included): 404 or 405.
  v1.setNotFoundHandler((request, reply) =>
    sendUnknownRoute(request, reply, allowedMethods(routes, decodeUnreserved(relativePath(request.url)))),
  );

  await v1.register(async (procedures) => {
    /** A route's onRequest hook, made per route (no lookup per request); callback-style, no promise. */
    function gate(route: RestRoute): onRequestHookHandler {
      const pattern = REST_BASE_PATH + route.path; // for the log and the metrics: /v1/pets/{petId}
      const deprecation = deprecationHeadersOf([route.meta]); // built once
      return (request, reply, done) => {
        // Fastify's router matches `/pets//` as `/pets/{petId}/` with an empty petId: no such resource.
        if (hasEmptySegment(relativePath(request.url))) {
          sendNoSuchResource(request, reply);
          return;
        }
        request.call.route = pattern;
        if (deprecation) reply.headers(deprecation);
        // Before the body is read: a caller without a key learns nothing about the input rules, and
        // every answer to a keyed request (a body that is not JSON too) counts and says the budget.
        const refusal = callerRefusal(request.call);
        if (refusal) {
          refuseEarly(request, reply, refusal);
          sendEnvelope(reply, answerForRefusal(refusal));
          return;
        }
        takeBudget(request, reply, keyRateLimiter, 1, (over) => void sendEnvelope(reply, answerForRefusal(over)), done);
      };
    }

    for (const route of routes) {
      const onRequest = gate(route);
      const nextPage: NextPageWriter<FastifyReply> | null = route.meta.nextPageLink
        ? (reply, input) => void reply.header('link', nextPageLink(route, input))
        : null;
      const type = route.method === 'GET' ? 'query' : 'mutation';
      // Not async: an async handler would have to return the reply (answers are written at the turn's
      // end, so Fastify would send again), and a returned reply is awaited through `Reply.then`, which
      // adds end-of-stream listeners per request.
      const handler = (request: FastifyRequest, reply: FastifyReply): void => {
        // A malformed input is the procedure's input error: after the key check and the per-key limit.
        const { input, problem } = rawInput(route, request);
        void pipeline.run(
          request,
          {
            path: route.procedure,
            type,
            ctx: createContext(request, reply, nextPage),
            getRawInput: async () => {
              if (problem !== null) throw new TRPCError({ code: 'BAD_REQUEST', message: problem });
              return input;
            },
          },
          (data) => sendOrFail(reply, () => reply.code(route.successStatus).send(data)),
          (error) => sendOrFail(reply, () => sendEnvelope(reply, answerForTRPCError(error))),
        );
      };
      // The path as documented, and with a trailing slash, which the contract's clients may send.
      for (const url of [route.fastifyPath, `${route.fastifyPath}/`]) {
        // GET routes answer HEAD with the same status and headers, and no body (Fastify's HEAD route).
        procedures.route({ method: route.method, url, exposeHeadRoute: route.method === 'GET', onRequest, handler });
      }
    }
  });
};
