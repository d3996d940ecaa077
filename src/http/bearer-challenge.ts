// The challenge every 401 carries, on both surfaces (RFC 9110 §11.6.1: a 401 MUST send
// WWW-Authenticate; RFC 6750 §3: the Bearer scheme's parameters). `error="invalid_token"` when a
// key was sent and refused; none when no key was sent (RFC 6750 §3.1: the client did not try).
import type { FastifyRequest } from 'fastify';

const AUTH_REALM = 'animal-store';

/** The WWW-Authenticate value for a 401 answer to `request`. */
export function bearerChallenge(request: Pick<FastifyRequest, 'headers'>): string {
  const sent = request.headers.authorization;
  return sent === undefined || sent.trim() === '' ? `Bearer realm="${AUTH_REALM}"` : `Bearer realm="${AUTH_REALM}", error="invalid_token"`;
}
