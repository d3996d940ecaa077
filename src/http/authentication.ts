// Decides who is calling, once per request, as `request.call.caller`: an identity, or a refusal (401;
// 429 while the address is locked out; 503 when the database could not check a stored key).
// Wrong keys are limited per client address: an attempt is counted before the key is checked and given
// back when it was right, so concurrent guesses cannot all be checked before a failure counts. A key
// seen valid from an address still works while it is locked out (clients behind one NAT: docs/security.md);
// a key seen valid recently, or being checked right now, takes nothing from the budget.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { databaseFaultRefusal, keyRefusal, lockedOutRefusal, refusedCaller, type Caller } from '../api/refusals.js';
import type { ApiKeyVerifier } from '../auth/api-keys.js';
import { digestOfHeader, type ApiKeyIdentity } from '../domain/api-key-shape.js';
import { databaseFault } from '../db/database-errors.js';
import { clientAddress, clientLimitKey } from './request-record.js';
import type { LimitDecision, Limiter } from '../limits/fixed-window-limiter.js';
import type { DatabaseHealth } from '../observability/dependencies.js';
import { logUnavailable } from './failure-log.js';

interface AuthenticationOptions {
  verifier: ApiKeyVerifier;
  /** Counts failed attempts (a key sent, and wrong) per client address. */
  failureLimiter: Limiter;
  databaseHealth?: DatabaseHealth;
}

/** How many recently valid key digests are remembered (oldest forgotten first). */
const KNOWN_VALID_DIGESTS = 10_000;

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

  /** A key being checked right now (answer shared) or seen valid recently: looked up again (revocation), taking no budget. */
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

  // Callback-style: the common request (an API_KEYS key seen valid, limits in memory) is decided without a promise.
  app.addHook('onRequest', (request, _reply, done) => {
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') {
      request.call.caller = NO_KEY; // nothing to check, nothing guessed
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
          request.call.caller = refusedCaller(lockedOutRefusal(standing.resetSeconds));
          return done();
        }
        // An API_KEYS key is answered at once; a stored key is looked up again (revocation) below.
        const identity = verifier.matchEnvKey(digest);
        if (identity) {
          provenFrom.add(inFlightKey);
          request.call.caller = { identity, refusal: null };
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

const NO_KEY = refusedCaller(keyRefusal(false));

/** A standing never read (a pending check's answer is shared instead). */
const NOT_ASKED: LimitDecision = Object.freeze({ allowed: true, limit: 0, remaining: 0, resetSeconds: 0 });

function settle(
  request: FastifyRequest,
  outcome: Promise<Outcome>,
  done: (error?: Error) => void,
  databaseHealth: DatabaseHealth | undefined,
): void {
  outcome.then(
    ({ identity, retryAfterSeconds }) => {
      if (identity !== null) request.call.caller = { identity, refusal: null };
      else request.call.caller = refusedCaller(retryAfterSeconds > 0 ? lockedOutRefusal(retryAfterSeconds) : keyRefusal(true));
      done();
    },
    (error: unknown) => {
      // A database fault while checking a key marks the request (503); anything else is a bug and propagates.
      const fault = databaseFault(error);
      if (fault === null) return done(error as Error);
      request.call.caller = refusedCaller(databaseFaultRefusal(fault));
      logUnavailable(request.log, error, databaseHealth, 'the database could not check an API key');
      done();
    },
  );
}

/** Registered at the root (fastify-plugin lifts encapsulation) so its hook runs for every route. */
export const authentication = fp(plugin, { name: 'authentication' });

const AUTH_REALM = 'animal-store';

/** The WWW-Authenticate challenge every 401 must carry (RFC 6750 §3): `invalid_token` only when a key was sent and refused. */
export function bearerChallenge(caller: Caller | null): string {
  return caller?.refusal?.reason === 'invalid_key' ? `Bearer realm="${AUTH_REALM}", error="invalid_token"` : `Bearer realm="${AUTH_REALM}"`;
}
