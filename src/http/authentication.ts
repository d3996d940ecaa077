// Puts the caller's identity on every request (`request.identity`, null when the key is missing or
// wrong), so that both surfaces see the same answer; each surface then decides how to refuse.
//
// It also limits wrong keys per client address (src/limits/client-address.ts): the attempt is
// counted BEFORE the key is checked, and given back when the key was right, so that concurrent or
// pipelined guesses from one address cannot all be checked before the first failure is counted:
// at most the limit are ever checked per window. Past the limit, keys from that address are not
// even checked until the window resets. A key seen valid recently, or being checked for another
// request at that moment (whose answer this one then shares), takes nothing from the budget while
// the address is not locked out, so that a genuine client's many concurrent requests do not use
// it up while their lookups are in flight.
//
// A database fault while checking a stored key (unreachable, disk full) is not a wrong key: the
// request is marked with it (`request.authFault`) and the surfaces answer 503 with Retry-After.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { digestOfHeader, type ApiKeyIdentity, type ApiKeyVerifier } from '../auth/api-keys.js';
import { databaseFault, type DatabaseFault } from '../db/database-errors.js';
import { clientLimitKey } from '../limits/client-address.js';
import type { Limiter } from '../limits/fixed-window-limiter.js';

declare module 'fastify' {
  interface FastifyRequest {
    identity: ApiKeyIdentity | null;
    /** Seconds this address must wait after too many failed attempts; 0 when it may try. */
    authRetryAfterSeconds: number;
    /** The database could not check the key: the request is answered 503. */
    authFault: DatabaseFault | null;
  }
}

interface AuthenticationOptions {
  verifier: ApiKeyVerifier;
  /** Counts failed attempts (a key sent, and wrong) per client address. */
  failureLimiter: Limiter;
}

/** How many recently valid key digests are remembered (oldest forgotten first). */
const KNOWN_VALID_DIGESTS = 10_000;

/** A set of at most `max` strings that forgets the oldest first. */
class BoundedSet {
  private readonly items = new Set<string>();
  constructor(private readonly max: number) {}
  has(item: string): boolean {
    return this.items.has(item);
  }
  add(item: string): void {
    if (this.items.has(item)) return;
    this.items.add(item);
    if (this.items.size > this.max) this.items.delete(this.items.values().next().value!);
  }
  delete(item: string): void {
    this.items.delete(item);
  }
}

const plugin: FastifyPluginAsync<AuthenticationOptions> = async (app, { verifier, failureLimiter }) => {
  const knownValid = new BoundedSet(KNOWN_VALID_DIGESTS);
  /** Checks under way, by digest: a request with the same key waits for that answer (no second check). */
  const checking = new Map<string, Promise<ApiKeyIdentity | null>>();
  const check = (digest: string) => {
    let pending = checking.get(digest);
    if (!pending) {
      pending = verifier.authenticateDigest(digest).finally(() => checking.delete(digest));
      checking.set(digest, pending);
    }
    return pending;
  };

  app.decorateRequest('identity', null);
  app.decorateRequest('authRetryAfterSeconds', 0);
  app.decorateRequest('authFault', null);

  app.addHook('onRequest', async (request) => {
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') return; // nothing to check, nothing guessed
    const address = clientLimitKey(request.ip);
    const digest = digestOfHeader(header); // null: malformed, a wrong key without a lookup
    let taken = false;
    try {
      if (digest !== null && (knownValid.has(digest) || checking.has(digest))) {
        // A key seen valid, or being checked for another request right now: this request adds
        // no guess, so it takes nothing from the budget first (unless the address is locked out).
        const standing = await failureLimiter.peek(address);
        if (!standing.allowed) {
          request.authRetryAfterSeconds = standing.resetSeconds;
          return;
        }
        request.identity = await check(digest);
        if (!request.identity) {
          knownValid.delete(digest); // revoked since, or a wrong key sent twice at once
          const failed = await failureLimiter.take(address);
          if (!failed.allowed) request.authRetryAfterSeconds = failed.resetSeconds;
        }
        return;
      }
      const attempt = await failureLimiter.take(address);
      taken = true;
      if (!attempt.allowed) {
        request.authRetryAfterSeconds = attempt.resetSeconds;
        return;
      }
      request.identity = digest === null ? null : await check(digest);
      if (request.identity) {
        knownValid.add(digest!);
        await failureLimiter.giveBack(address);
      }
    } catch (error) {
      const fault = databaseFault(error);
      if (fault === null) throw error;
      request.authFault = fault;
      request.log.warn({ err: error }, 'the database could not check an API key');
      // Not a wrong key: it was never checked.
      if (taken) await failureLimiter.giveBack(address);
    }
  });
};

/** Registered at the root (fastify-plugin lifts encapsulation) so its hook runs for every route. */
export const authentication = fp(plugin, { name: 'authentication' });

/**
 * For a request refused before its body is read (no valid key): ask Node to close the connection
 * once the answer is sent, so the rest of the body is never read (a client trickling a large body
 * would otherwise hold the connection while Node drains it to reach the next request).
 */
export function closeAfterRefusal(request: FastifyRequest, reply: FastifyReply): void {
  const { headers } = request;
  const announcesBody = headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
  if (announcesBody) reply.header('connection', 'close');
}
