// Decides who is calling, once per request, so that both surfaces see the same answer;
// `prepareRefusal` below readies the surfaces' early answer to a request without an identity.
//
// It also limits wrong keys per client address (src/limits/client-address.ts): the attempt is
// counted BEFORE the key is checked, and given back when the key was right, so that concurrent or
// pipelined guesses from one address cannot all be checked before the first failure is counted:
// at most the limit are ever checked per window. Past the limit, keys from that address are not
// even checked until the window resets, except a key already seen valid from that address: many
// clients behind one NAT share an address, and one of them guessing must not lock the others out
// (a guesser gains nothing: such a key was valid already; docs/security.md). A key seen valid recently, or being checked for another
// request at that moment (whose answer this one then shares), takes nothing from the budget while
// the address is not locked out, so that a genuine client's many concurrent requests do not use
// it up while their lookups are in flight.
//
// What it decides is put on the request once: `identity`, or `identityRefusal` (src/api/refusals.ts:
// 401, 429 while the address is locked out, or 503 when the database could not check a stored key,
// which is not a wrong key); the surfaces and the procedures' middleware answer with it.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { databaseFaultRefusal, keyRefusal, lockedOutRefusal, type Refusal } from '../api/refusals.js';
import { digestOfHeader, type ApiKeyIdentity, type ApiKeyVerifier } from '../auth/api-keys.js';
import { databaseFault } from '../db/database-errors.js';
import { clientAddress, clientLimitKey } from '../limits/client-address.js';
import type { LimitDecision, Limiter } from '../limits/fixed-window-limiter.js';
import type { DatabaseHealth } from '../observability/dependencies.js';
import { announcesBody } from './request-bodies.js';

declare module 'fastify' {
  interface FastifyRequest {
    identity: ApiKeyIdentity | null;
    /** Why the request has no identity (401, 429 for a locked-out address, 503); null when it has one. */
    identityRefusal: Refusal | null;
    /** The refusal this request was answered with, recorded where it was decided (metrics and log read it). */
    refusal: Refusal | null;
    /** The per-key limit's decision for this request, taken once (src/api/trpc.ts; a batch's in src/http/trpc-plugin.ts). */
    budget: LimitDecision | null;
  }
}

interface AuthenticationOptions {
  verifier: ApiKeyVerifier;
  /** Counts failed attempts (a key sent, and wrong) per client address. */
  failureLimiter: Limiter;
  /** Told of the database faults met while checking keys (one line per outage, not per request). */
  databaseHealth?: DatabaseHealth;
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

/** What checking a request's key came to. */
interface Outcome {
  identity: ApiKeyIdentity | null;
  /** Seconds until the address may try again; 0 when it was not refused. */
  retryAfterSeconds: number;
}

type Standing = LimitDecision | Promise<LimitDecision>;

const plugin: FastifyPluginAsync<AuthenticationOptions> = async (app, { verifier, failureLimiter, databaseHealth }) => {
  const knownValid = new BoundedSet(KNOWN_VALID_DIGESTS);
  /** `address digest` of keys seen valid from that address: they go on working while it is locked out. */
  const provenFrom = new BoundedSet(KNOWN_VALID_DIGESTS);
  /** Whether the address's standing refuses this key: locked out, and the key not proven from there. */
  const lockedOut = (standing: { allowed: boolean }, address: string, digest: string) =>
    !standing.allowed && !provenFrom.has(`${address} ${digest}`);
  /** Checks under way, by address and digest: a request with the same key from the same address shares the answer. */
  const checking = new Map<string, Promise<Outcome>>();

  /** A key not known to be valid: the attempt is counted first, and given back when the key was right. */
  async function firstCheck(address: string, digest: string | null): Promise<Outcome> {
    const attempt = await failureLimiter.take(address);
    if (!attempt.allowed) return { identity: null, retryAfterSeconds: attempt.resetSeconds };
    let identity: ApiKeyIdentity | null;
    try {
      identity = digest === null ? null : await verifier.authenticateDigest(digest);
    } catch (error) {
      await failureLimiter.giveBack(address); // not a wrong key: it was never checked
      throw error;
    }
    if (identity) {
      knownValid.add(digest!);
      provenFrom.add(`${address} ${digest}`);
      await failureLimiter.giveBack(address);
    }
    return { identity, retryAfterSeconds: 0 };
  }

  /**
   * A key being checked for another request from this address right now (its answer is shared),
   * or seen valid recently: looked up once more (revocation), without taking from the budget
   * unless the address is locked out (`standing`: the address's standing, peeked once per request).
   * Neither adds a guess; a wrong answer (revoked since) counts as a failure after.
   */
  async function laterCheck(address: string, digest: string, pending: Promise<Outcome> | undefined, standing: Standing): Promise<Outcome> {
    let outcome: Outcome;
    if (pending) {
      outcome = await pending;
    } else {
      const decided = standing instanceof Promise ? await standing : standing;
      if (lockedOut(decided, address, digest)) return { identity: null, retryAfterSeconds: decided.resetSeconds };
      outcome = { identity: await verifier.authenticateDigest(digest), retryAfterSeconds: 0 };
    }
    if (outcome.identity) provenFrom.add(`${address} ${digest}`);
    if (outcome.identity || outcome.retryAfterSeconds > 0) return outcome;
    knownValid.delete(digest); // revoked since
    provenFrom.delete(`${address} ${digest}`);
    const failed = await failureLimiter.take(address);
    return { identity: null, retryAfterSeconds: failed.allowed ? 0 : failed.resetSeconds };
  }

  app.decorateRequest('identity', null);
  app.decorateRequest('identityRefusal', null);
  app.decorateRequest('refusal', null);
  app.decorateRequest('budget', null);

  // A callback-style hook: the common request (an API_KEYS key seen valid, limits in memory) is
  // decided without a promise; anything that must wait (a stored key's lookup) goes through `check`.
  // The address's standing is peeked once per request and handed on.
  app.addHook('onRequest', (request, _reply, done) => {
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') {
      request.identityRefusal = keyRefusal(false); // nothing to check, nothing guessed
      return done();
    }
    const address = clientLimitKey(clientAddress(request));
    const digest = digestOfHeader(header); // null: malformed, a wrong key without a lookup
    const inFlightKey = `${address} ${digest}`;
    const pending = digest === null || checking.size === 0 ? undefined : checking.get(inFlightKey);
    if (digest !== null && (pending || knownValid.has(digest))) {
      const standing = pending ? NOT_ASKED : failureLimiter.peek(address);
      if (!pending && !(standing instanceof Promise)) {
        if (lockedOut(standing, address, digest)) {
          request.identityRefusal = lockedOutRefusal(standing.resetSeconds);
          return done();
        }
        // An API_KEYS key is answered at once; a stored key is looked up again (revocation) below.
        const identity = verifier.matchEnvKey(digest);
        if (identity) {
          provenFrom.add(inFlightKey);
          request.identity = identity;
          return done();
        }
      }
      return settle(request, laterCheck(address, digest, pending, standing), done, databaseHealth);
    }
    const outcome = firstCheck(address, digest);
    if (digest !== null) {
      checking.set(inFlightKey, outcome);
      outcome.finally(() => checking.delete(inFlightKey)).catch(() => {}); // its own awaiter reports errors
    }
    settle(request, outcome, done, databaseHealth);
  });
};

/** A standing never read (a pending check's answer is shared instead). */
const NOT_ASKED: LimitDecision = Object.freeze({ allowed: true, limit: 0, remaining: 0, resetSeconds: 0 });

/** Puts a check's outcome on the request: its identity, or why it has none. */
function settle(
  request: FastifyRequest,
  outcome: Promise<Outcome>,
  done: (error?: Error) => void,
  databaseHealth: DatabaseHealth | undefined,
): void {
  outcome.then(
    ({ identity, retryAfterSeconds }) => {
      request.identity = identity;
      if (identity === null) request.identityRefusal = retryAfterSeconds > 0 ? lockedOutRefusal(retryAfterSeconds) : keyRefusal(true);
      done();
    },
    (error: unknown) => {
      // A database fault while checking a key marks the request (503); anything else is a bug and propagates.
      const fault = databaseFault(error);
      if (fault === null) return done(error as Error);
      request.identityRefusal = databaseFaultRefusal(fault);
      databaseHealth?.failed(error, request.log, 'the database could not check an API key');
      done();
    },
  );
}

/** Registered at the root (fastify-plugin lifts encapsulation) so its hook runs for every route. */
export const authentication = fp(plugin, { name: 'authentication' });

/**
 * Readies the answer to a request refused before its body is read (src/api/refusals.ts): the
 * refusal recorded on the request (for the metrics and the log), its Retry-After, and Node asked to close the connection once the answer is sent, so that the rest of
 * the body is never read (a client trickling a large body would otherwise hold the connection
 * while Node drains it to reach the next request). The surface then sends its own body.
 */
export function prepareRefusal(request: FastifyRequest, reply: FastifyReply, refusal: Refusal): void {
  request.refusal = refusal;
  if (refusal.retryAfterSeconds !== undefined) reply.header('retry-after', String(refusal.retryAfterSeconds));
  if (announcesBody(request.headers)) reply.header('connection', 'close');
}
