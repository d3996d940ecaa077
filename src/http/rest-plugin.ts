// The REST surface under /v1: each route of rest-routes.ts's table is a Fastify route that calls its
// procedure through its tRPC middleware chain, with the contract's rules: 404/405, the key checked
// before the body is read, strict parameters, deprecation headers, 201 on create, the error envelope.
// A departure from trpc-to-openapi's handler: docs/architecture.md ("departures").
import { errorCodes, type FastifyPluginAsync, type FastifyReply, type FastifyRequest, type onRequestHookHandler } from 'fastify';
import { TRPCError } from '@trpc/server';
import type { AppRouter } from '../api/root-router.js';
import type { CreateContext, NextPageInput, NextPageWriter } from '../api/trpc.js';
import { answerForRefusal, answerForTRPCError } from '../api/errors.js';
import { bodyText, parseJson } from '../domain/json-text.js';
import type { Limiter } from '../limits/fixed-window-limiter.js';
import { callerRefusal, refuseEarly, takeBudget, type CallPipeline } from './call-pipeline.js';
import { deprecationHeadersOf } from './deprecation-headers.js';
import { docsPlugin } from './docs-plugin.js';
import { sendEnvelope, sendNoSuchResource, sendUnknownRoute } from './error-senders.js';
import { API_TITLE, buildOpenApiDocument, REST_BASE_PATH } from './openapi-document.js';
import {
  allowedMethods,
  BODY_METHODS,
  buildRestRoutes,
  decodeUnreserved,
  hasEmptySegment,
  restInput,
  strictParamProblem,
  type RestRoute,
} from './rest-routes.js';

export interface RestPluginOptions {
  router: AppRouter;
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
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(input)) if (value !== undefined) query.set(name, String(value));
  return `<${REST_BASE_PATH}${route.path}?${query.toString()}>; rel="next"`;
}

/** Runs a send; one that throws (an unserialisable body) goes to the error handler, as Fastify's own promise handling does. */
function sendOrFail(reply: FastifyReply, send: () => unknown): void {
  try {
    send();
  } catch (error) {
    reply.send(error);
  }
}

export const restPlugin: FastifyPluginAsync<RestPluginOptions> = async (v1, { router, createContext, keyRateLimiter, pipeline }) => {
  const routes = buildRestRoutes(router);

  // Built at the first request for it, then kept; a failed build is not kept.
  let document: ReturnType<typeof buildOpenApiDocument> | undefined;
  const openApiDocument = () => {
    const building = (document ??= buildOpenApiDocument(router, routes));
    building.catch(() => {
      if (document === building) document = undefined;
    });
    return building;
  };

  // JSON is the only body read (other types: 415). Not Fastify's parser, which rounds numbers and calls
  // `__proto__` invalid JSON; as bytes, decoded strictly, where Fastify's string would hold U+FFFD.
  v1.removeContentTypeParser('text/plain');
  v1.removeContentTypeParser('application/json');
  v1.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJsonBody);

  // Unknown paths, and known paths with another method (OPTIONS included): 404 or 405.
  v1.setNotFoundHandler((request, reply) =>
    sendUnknownRoute(request, reply, allowedMethods(routes, decodeUnreserved(relativePath(request.url)))),
  );

  // The document and its reference page are public: they hold no data, and are needed before a key.
  v1.get('/openapi.json', async (_request, reply) => reply.send(await openApiDocument()));
  await v1.register(docsPlugin, {
    prefix: '/docs',
    documentUrl: `${REST_BASE_PATH}/openapi.json`,
    title: `${API_TITLE} API reference`,
  });

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
