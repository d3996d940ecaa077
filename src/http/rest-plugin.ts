// The REST surface under /v1: the procedures served by trpc-to-openapi's Fastify plugin, with the
// contract's rules the library does not keep applied around it in this one encapsulated context:
// 404/405, authentication before any body is read, strict parameters, the deprecation headers,
// 201 on create, and the error envelope on every error (the library's own error bodies included).
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { fastifyTRPCOpenApiPlugin, type CreateOpenApiFastifyPluginOptions } from 'trpc-to-openapi';
import type { AppRouter } from '../api/root-router.js';
import type { Context } from '../api/context.js';
import { deprecationHeaders } from './deprecation.js';
import { docsPlugin } from './docs-plugin.js';
import {
  envelopeForFastifyError,
  envelopeForOpenApiError,
  isErrorEnvelope,
  sendEnvelope,
  sendError,
} from './error-envelope.js';
import { buildOpenApiDocument, REST_BASE_PATH } from './openapi-document.js';
import { buildRestRoutes, matchRoute, strictParamProblem, type RestRoute, type RouteMatch } from './rest-routes.js';

export interface RestPluginOptions {
  router: AppRouter;
  createContext: (request: FastifyRequest, reply: FastifyReply) => Context;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The REST route this request matched (set by the REST plugin's onRequest hook). */
    restMatch?: RouteMatch & { route: RestRoute };
  }
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

function relativePath(url: string): string {
  const path = url.slice(REST_BASE_PATH.length);
  const query = path.indexOf('?');
  return query === -1 ? path : path.slice(0, query);
}

function sendUnknownRoute(request: FastifyRequest, reply: FastifyReply, match: RouteMatch): FastifyReply {
  if (match.allowedMethods.length === 0) {
    return sendError(reply, 404, `No such resource: ${request.method} ${request.url.split('?')[0]}`);
  }
  reply.header('allow', match.allowedMethods.join(', '));
  return sendError(reply, 405, `${request.method} is not supported here; use ${match.allowedMethods.join(' or ')}`);
}

export const restPlugin: FastifyPluginAsync<RestPluginOptions> = async (v1, { router, createContext }) => {
  const routes = buildRestRoutes(router);
  const document = buildOpenApiDocument(router, routes);
  const routeByProcedure = new Map(routes.map((route) => [route.procedure, route]));

  // JSON is the only body this API reads; without the text/plain parser Fastify answers 415.
  v1.removeContentTypeParser('text/plain');

  v1.setErrorHandler((error: FastifyError, request, reply) => {
    const envelope = envelopeForFastifyError(error);
    if (envelope.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendEnvelope(reply, envelope);
  });

  v1.setNotFoundHandler((request, reply) =>
    sendUnknownRoute(request, reply, matchRoute(routes, request.method, relativePath(request.url))),
  );

  // The document is public: it holds no data, and tools and people need it before they have a key.
  v1.get('/openapi.json', (_request, reply) => reply.send(document));
  // The reference page that renders it, public for the same reason (src/http/docs-plugin.ts).
  await v1.register(docsPlugin, {
    prefix: '/docs',
    documentUrl: `${REST_BASE_PATH}/openapi.json`,
    title: `${document.info.title} API reference`,
  });

  await v1.register(async (procedures) => {
    procedures.addHook('onRequest', async (request, reply) => {
      const match = matchRoute(routes, request.method, relativePath(request.url));
      const deprecation = match.route?.meta.deprecation;
      if (deprecation) reply.headers(deprecationHeaders(deprecation));
      if (!match.route) return sendUnknownRoute(request, reply, match);
      request.routePattern = REST_BASE_PATH + match.route.path;
      // Before the body is read: a caller without a key learns nothing about the input rules.
      if (!request.identity) {
        if (request.authRetryAfterSeconds > 0) {
          reply.header('retry-after', String(request.authRetryAfterSeconds));
          return sendError(reply, 429, `Too many failed authentication attempts from this address; retry after ${request.authRetryAfterSeconds} s.`);
        }
        return sendError(reply, 401, 'A valid API key is required: send "Authorization: Bearer <key>".');
      }
      request.restMatch = { ...match, route: match.route };
    });

    procedures.addHook('preValidation', async (request, reply) => {
      const { route, pathParams } = request.restMatch!;
      if (BODY_METHODS.has(route.method)) {
        const body = request.body;
        if (body === undefined) return sendError(reply, 400, 'body: is required (a JSON object)');
        if (typeof body !== 'object' || body === null || Array.isArray(body)) {
          return sendError(reply, 400, 'body: must be a JSON object');
        }
        return;
      }
      const problem = strictParamProblem(route, pathParams, request.query as Record<string, unknown>);
      if (problem) return sendError(reply, 400, problem);
    });

    // trpc-to-openapi writes its own error body, and has no option to change it: rewrite it here.
    procedures.addHook('onSend', async (_request, reply, payload) => {
      if (reply.statusCode < 400 || typeof payload !== 'string') return payload;
      let body: unknown;
      try {
        body = JSON.parse(payload);
      } catch {
        body = undefined;
      }
      if (isErrorEnvelope(body)) return payload;
      const envelope = envelopeForOpenApiError(reply.statusCode, body);
      reply.code(envelope.status).type('application/json; charset=utf-8');
      return JSON.stringify(envelope);
    });

    const openApiOptions: CreateOpenApiFastifyPluginOptions<AppRouter> = {
      router,
      // The adapter hands over Fastify's own request and reply (with a few Node methods added).
      createContext: ({ req, res }) => createContext(req as unknown as FastifyRequest, res as unknown as FastifyReply),
      responseMeta: ({ paths, errors }) => {
        const status = errors.length === 0 && paths?.[0] ? routeByProcedure.get(paths[0])?.meta.successStatus : undefined;
        return status ? { status } : {};
      },
      onError: ({ error, req }) => {
        const log = (req as unknown as FastifyRequest).log;
        if (error.code === 'INTERNAL_SERVER_ERROR') log.error({ err: error.cause ?? error }, 'procedure failed');
        if (error.code === 'SERVICE_UNAVAILABLE') log.warn({ err: error.cause ?? error }, 'database unavailable');
      },
    };
    await procedures.register(fastifyTRPCOpenApiPlugin, openApiOptions);
  });
};
