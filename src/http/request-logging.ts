// One log line per request, written when the response has gone: request id, method, route
// pattern, status and duration. It replaces Fastify's own pair of lines ("incoming request" /
// "request completed"), which split one request over two lines and name only the raw URL.
// Headers are never logged, so neither is the Authorization header nor the key in it.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * What the request was for, as a pattern: `/v1/pets/{petId}`, `/trpc/pets.list`. Set by the
     * surface that understood it; otherwise the Fastify route (`/healthz`), or null when none matched.
     */
    routePattern?: string;
  }
}

function routeOf(request: FastifyRequest): string | null {
  return request.routePattern ?? request.routeOptions.url ?? null;
}

const plugin: FastifyPluginAsync = async (app) => {
  // The URL as received: trpc-to-openapi rewrites request.url (and the raw one) without the /v1 prefix.
  const receivedUrls = new WeakMap<FastifyRequest, string>();
  app.addHook('onRequest', async (request) => {
    receivedUrls.set(request, request.url);
  });

  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        route: routeOf(request),
        url: receivedUrls.get(request) ?? request.url,
        statusCode: reply.statusCode,
        responseTimeMs: Math.round(reply.elapsedTime * 100) / 100,
      },
      'request completed',
    );
  });
};

/** Registered at the root (fastify-plugin lifts encapsulation) so that every response is logged. */
export const requestLogging = fp(plugin, { name: 'request-logging' });
