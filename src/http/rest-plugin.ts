// The REST surface under /v1: every route of the table read from the procedures' `openapi`
// metadata (rest-routes.ts) is a Fastify route here that calls its procedure directly, with the
// contract's rules applied in this one encapsulated context: 404/405, authentication before any
// body is read, strict parameters, the deprecation headers, 201 on create, and the error
// envelope on every error.
//
// Why not trpc-to-openapi's own handler: it cannot give the envelope, 201, 405/Allow or strict
// parameters, and it costs more (docs/architecture.md, "Where we depart from a library"). The
// procedures still run through their tRPC middleware chain, so validation is the tRPC surface's.
// Per route: `gate` (onRequest) refuses before the body is read; the handler answers.
import { errorCodes, type FastifyPluginAsync, type FastifyReply, type FastifyRequest, type onRequestHookHandler } from 'fastify';
import { TRPCError } from '@trpc/server';
import type { AppRouter } from '../api/root-router.js';
import type { CreateContext, NextPageInput, NextPageWriter } from '../api/context.js';
import { answerForRefusal, answerForTRPCError } from '../api/errors.js';
import { bodyText, parseJson } from '../domain/json-text.js';
import { callerRefusal, refuseEarly, type CallPipeline } from './call-pipeline.js';
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
  /** The stages both surfaces share (src/http/call-pipeline.ts). */
  pipeline: CallPipeline;
}

/** The path relative to /v1, without the query, as sent (before `decodeUnreserved`). */
function relativePath(url: string): string {
  const path = url.slice(REST_BASE_PATH.length);
  const query = path.indexOf('?');
  return query === -1 ? path : path.slice(0, query);
}

/**
 * The path's `{parameters}` by our one decoding rule (`decodeUnreserved`), not Fastify's
 * `request.params`, which decode everything (`%2F` included).
 */
function pathParams(route: RestRoute, request: FastifyRequest): Record<string, string> {
  if (!route.path.includes('{')) return {};
  const path = relativePath(request.url);
  // Without a percent-encoding both rules read the same segments: Fastify's are already parsed.
  if (!path.includes('%')) return request.params as Record<string, string>;
  return { ...route.pattern.exec(decodeUnreserved(path))?.groups };
}

/**
 * A JSON body as Fastify's own parser reads it (empty: FST_ERR_CTP_EMPTY_JSON_BODY; not JSON:
 * FST_ERR_CTP_INVALID_JSON_BODY; one leading byte order mark dropped), by the integer rule. JSON.parse makes `__proto__` an own property like any
 * other key, never the object's prototype; the procedure's schema refuses it as an unknown field.
 */
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

/** What is wrong with the shape of a request body before its procedure sees it, or null. */
function bodyProblem(body: unknown): string | null {
  if (body === undefined) return 'body: is required (a JSON object)';
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'body: must be a JSON object';
  return null;
}

/**
 * The procedure's raw input: the JSON body, or the path and query parameters; `problem` when its
 * shape is wrong before the procedure's own validation.
 */
function rawInput(route: RestRoute, request: FastifyRequest): { input: unknown; problem: string | null } {
  if (BODY_METHODS.has(route.method)) return { input: request.body, problem: bodyProblem(request.body) };
  const params = pathParams(route, request);
  const query = request.query as Record<string, unknown>;
  const problem = strictParamProblem(route, params, query);
  return { input: problem === null ? restInput(route, params, query) : undefined, problem };
}

/**
 * The RFC 8288 `Link` header to a list's next page: the route's own path (a list has no path
 * parameters) with the procedure's input values as the query.
 */
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

export const restPlugin: FastifyPluginAsync<RestPluginOptions> = async (v1, { router, createContext, pipeline }) => {
  const routes = buildRestRoutes(router);

  // Built at the first request for it (see openapi-document.ts), then kept: it never changes. A
  // build that failed is not kept: the next request tries again.
  let document: ReturnType<typeof buildOpenApiDocument> | undefined;
  const openApiDocument = () => {
    const building = (document ??= buildOpenApiDocument(router, routes));
    building.catch(() => {
      if (document === building) document = undefined;
    });
    return building;
  };

  // JSON is the only body this API reads; without the text/plain parser Fastify answers 415.
  v1.removeContentTypeParser('text/plain');
  // Read with the integer rule (src/domain/json-text.ts) instead of Fastify's parser, which
  // rounds numbers and calls a `__proto__` key invalid JSON (here it is an unknown field).
  v1.removeContentTypeParser('application/json');
  // As bytes: they are decoded strictly (bodyText), where Fastify's string would hold U+FFFD for bad bytes.
  v1.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJsonBody);

  // Errors Fastify raises here (bad JSON, 413, 415) reach the app's error handler (src/app.ts): the envelope.

  // Unknown paths, and known paths with another method (OPTIONS included): 404 or 405.
  v1.setNotFoundHandler((request, reply) =>
    sendUnknownRoute(request, reply, allowedMethods(routes, decodeUnreserved(relativePath(request.url)))),
  );

  // The document is public: it holds no data, and tools and people need it before they have a key.
  v1.get('/openapi.json', async (_request, reply) => reply.send(await openApiDocument()));
  // The reference page that renders it, public for the same reason (src/http/docs-plugin.ts).
  await v1.register(docsPlugin, {
    prefix: '/docs',
    documentUrl: `${REST_BASE_PATH}/openapi.json`,
    title: `${API_TITLE} API reference`,
  });

  await v1.register(async (procedures) => {
    /**
     * The route's onRequest hook (callback-style: an async one costs a promise per request; a hook
     * that answers the request itself does not call done()). One per route, so that the route and
     * its headers are at hand without a lookup per request.
     */
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
        // Before the body is read: a caller without a key learns nothing about the input rules.
        const refusal = callerRefusal(request.call);
        if (refusal) {
          refuseEarly(request, reply, refusal);
          sendEnvelope(reply, answerForRefusal(refusal));
          return;
        }
        done();
      };
    }

    for (const route of routes) {
      const onRequest = gate(route);
      // A list's next page, as a `Link` header to this route with the next page's input (RFC 8288).
      const nextPage: NextPageWriter<FastifyReply> | null = route.meta.nextPageLink
        ? (reply, input) => void reply.header('link', nextPageLink(route, input))
        : null;
      const type = route.method === 'GET' ? 'query' : 'mutation';
      // Not async, and returns nothing: the answer is sent when the call settles. An async handler
      // would have to return the reply (our answers are written at the turn's end, so Fastify
      // would otherwise send again), and a returned reply is awaited through `Reply.then`, which
      // adds end-of-stream listeners per request.
      const handler = (request: FastifyRequest, reply: FastifyReply): void => {
        // A malformed input is refused as the procedure's input error: after the key check and
        // the per-key limit (protectedProcedure), so that such requests count like any other.
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
