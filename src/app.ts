// Builds the HTTP application: a configured Fastify instance that does not listen yet, so tests
// can `inject` into it or listen on a free port. src/main.ts is the entry that listens.
//
// A request's path: Fastify → authentication hook (src/http/authentication.ts) → the surface's
// plugin (/trpc: src/http/trpc-plugin.ts, /v1: src/http/rest-plugin.ts) → procedure
// (src/pets/pets-router.ts) → repository (src/pets/pet-repository.ts) → Prisma.
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyError } from 'fastify';
import type { Logger } from 'pino';
import { appRouter } from './api/root-router.js';
import type { Context } from './api/context.js';
import { createApiKeyVerifier } from './auth/api-keys.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { authentication } from './http/authentication.js';
import { envelopeForFastifyError, rawHttpErrorResponse, sendError } from './http/error-envelope.js';
import { REST_BASE_PATH } from './http/openapi-document.js';
import { restPlugin } from './http/rest-plugin.js';
import { trpcPlugin } from './http/trpc-plugin.js';
import { createPetRepository } from './pets/pet-repository.js';
import { requestLogController } from './logger.js';

export interface AppDependencies {
  config: Pick<Config, 'apiKeys' | 'bodyLimitBytes'>;
  database: Database;
  logger: Logger;
}

export async function buildApp({ config, database, logger }: AppDependencies) {
  const app = Fastify({
    loggerInstance: logger,
    logController: requestLogController(),
    bodyLimit: config.bodyLimitBytes,
    // A caller's X-Request-Id (e.g. from a load balancer) names the request in our logs too.
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    clientErrorHandler: (error: Error & { code?: string }, socket) => {
      if (socket.writable) socket.end(rawHttpErrorResponse(error));
      else socket.destroy();
    },
  });

  const pets = createPetRepository(database);
  const createContext = (request: { identity: Context['identity'] }): Context => ({ identity: request.identity, pets });

  await app.register(authentication, { verifier: createApiKeyVerifier(config.apiKeys) });

  // Set when the request arrives, so every answer carries it (as an async onSend hook it cost a
  // promise per request for the same result).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const envelope = envelopeForFastifyError(error);
    if (envelope.status >= 500) request.log.error({ err: error }, 'request failed');
    return reply.code(envelope.status).type('application/json; charset=utf-8').send(envelope);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, 404, `No such resource: ${request.method} ${request.url.split('?')[0]}`),
  );

  await app.register(trpcPlugin, { prefix: '/trpc', router: appRouter, createContext });
  await app.register(restPlugin, { prefix: REST_BASE_PATH, router: appRouter, createContext });
  return app;
}

export type App = Awaited<ReturnType<typeof buildApp>>;
