// Puts the caller's identity on every request (`request.identity`, null when the key is missing or
// wrong), so that both surfaces see the same answer; each surface then decides how to refuse.
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiKeyIdentity, ApiKeyVerifier } from '../auth/api-keys.js';

declare module 'fastify' {
  interface FastifyRequest {
    identity: ApiKeyIdentity | null;
  }
}

const plugin: FastifyPluginAsync<{ verifier: ApiKeyVerifier }> = async (app, { verifier }) => {
  app.decorateRequest('identity', null);
  app.addHook('onRequest', async (request) => {
    request.identity = verifier.authenticate(request.headers.authorization);
  });
};

/** Registered at the root (fastify-plugin lifts encapsulation) so its hook runs for every route. */
export const authentication = fp(plugin, { name: 'authentication' });
