// The typed tRPC surface at /trpc, for internal TypeScript apps (`createTRPCClient<AppRouter>`).
// Errors keep tRPC's own format (clients decode it); they never carry a stack trace (src/api/trpc.ts).
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { fastifyTRPCPlugin, type FastifyTRPCPluginOptions } from '@trpc/server/adapters/fastify';
import type { AppRouter } from '../api/root-router.js';
import type { Context } from '../api/context.js';
import type { ApiMeta } from '../api/trpc.js';
import { deprecationHeaders } from './deprecation.js';

export interface TrpcPluginOptions {
  router: AppRouter;
  createContext: (request: FastifyRequest, reply: FastifyReply) => Context;
}

export const trpcPlugin: FastifyPluginAsync<TrpcPluginOptions> = async (app, { router, createContext }) => {
  const procedures = router._def.procedures as unknown as Record<string, { _def: { meta?: ApiMeta } }>;

  // The adapter's one route is `/:path`; the log names the procedures called (`/trpc/pets.list`,
  // a batch: `/trpc/pets.list,pets.get`). Unknown names stay out of it: they are the caller's text.
  app.addHook('onRequest', async (request) => {
    const { path } = request.params as { path?: string };
    if (path?.split(',').every((name) => Object.hasOwn(procedures, name))) request.routePattern = `${app.prefix}/${path}`;
  });

  await app.register(fastifyTRPCPlugin, {
    trpcOptions: {
      router,
      createContext: ({ req, res }) => createContext(req, res),
      // A deprecated procedure announces it here too, with the same headers as on REST.
      responseMeta: ({ paths }) => {
        const deprecation = paths?.map((path) => procedures[path]?._def.meta?.deprecation).find(Boolean);
        return deprecation ? { headers: deprecationHeaders(deprecation) } : {};
      },
      onError: ({ error, req }) => {
        if (error.code === 'INTERNAL_SERVER_ERROR') req.log.error({ err: error.cause ?? error }, 'procedure failed');
        if (error.code === 'SERVICE_UNAVAILABLE') req.log.warn({ err: error.cause ?? error }, 'database unavailable');
      },
    } satisfies FastifyTRPCPluginOptions<AppRouter>['trpcOptions'],
  });
};
