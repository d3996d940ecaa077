// Puts the caller's identity on every request (`request.identity`, null when the key is missing or
// wrong), so that both surfaces see the same answer; each surface then decides how to refuse.
// It also limits failed attempts per client address: past the limit, keys from that address are
// not even checked until the window resets, so keys cannot be guessed at speed.
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiKeyIdentity, ApiKeyVerifier } from '../auth/api-keys.js';
import type { FixedWindowLimiter } from '../limits/fixed-window-limiter.js';

declare module 'fastify' {
  interface FastifyRequest {
    identity: ApiKeyIdentity | null;
    /** Seconds this address must wait after too many failed attempts; 0 when it may try. */
    authRetryAfterSeconds: number;
  }
}

interface AuthenticationOptions {
  verifier: ApiKeyVerifier;
  /** Counts failed attempts (a key sent, and wrong) per client address. */
  failureLimiter: FixedWindowLimiter;
}

const plugin: FastifyPluginAsync<AuthenticationOptions> = async (app, { verifier, failureLimiter }) => {
  app.decorateRequest('identity', null);
  app.decorateRequest('authRetryAfterSeconds', 0);
  app.addHook('onRequest', async (request) => {
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') return; // nothing to check, nothing guessed
    const standing = failureLimiter.peek(request.ip);
    if (!standing.allowed) {
      request.authRetryAfterSeconds = standing.resetSeconds;
      return;
    }
    request.identity = await verifier.authenticate(header);
    if (!request.identity) failureLimiter.hit(request.ip);
  });
};

/** Registered at the root (fastify-plugin lifts encapsulation) so its hook runs for every route. */
export const authentication = fp(plugin, { name: 'authentication' });
