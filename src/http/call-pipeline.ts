// The call pipeline both surfaces share. Admission: who is calling (the caller's refusal), the per-key
// budget taken once per request (`takeBudget`), every refusal recorded once with its Retry-After
// (`recordRefusal`). The run: a decoded call through its procedure's middleware chain, a failure
// mapped and logged once. And how an answer looks on each surface: the envelope (REST and the rest) or
// tRPC's error shape, through Fastify or as a whole response on a raw socket.
import { randomUUID } from 'node:crypto';
import cors from '@fastify/cors';
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { AnyTRPCRouter, TRPCError } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import type { AnswerWriter, Context } from '../api/trpc.js';
import { answerForFastifyError, errorEnvelope, trpcErrorShapes, type ClientErrorAnswer, type ErrorAnswer } from '../api/errors.js';
import {
  databaseFaultRefusal,
  keyRateLimitRefusal,
  keyRefusal,
  lockedOutRefusal,
  refusedCaller,
  type Caller,
  type Refusal,
} from '../api/refusals.js';
import type { ApiKeyVerifier } from '../auth/api-keys.js';
import { databaseFault } from '../db/database-errors.js';
import { digestOfHeader, type ApiKeyIdentity } from '../domain/api-key-shape.js';
import type { AppRouter } from '../api/root-router.js';
import { trpcInternals } from '../api/trpc-internals.js';
import type { LimitDecision, Limiter } from '../limits/fixed-window-limiter.js';
import type { DatabaseHealth } from '../observability/dependencies.js';
import { writeAtTurnEnd } from './connections.js';
import { logFailure, logUnavailable } from './failure-log.js';
import { announcesBody, bodyEncodingError } from './request-bodies.js';
import { clientAddress, clientLimitKey, formatTraceparent, traceContextFor, traceContextOf, type CallDecision } from './request-record.js';

/** The caller of a request that sent no key, or reached no authentication. */
const NO_KEY = refusedCaller(keyRefusal(false));

/** The refusal a request gets for who is calling (authentication decided it), or null. */
export function callerRefusal(call: CallDecision): Refusal | null {
  return (call.caller ?? NO_KEY).refusal;
}

/** Records why the request was refused, and when it may be tried again (Retry-After, RFC 9110). */
export function recordRefusal(reply: FastifyReply, refusal: Refusal): void {
  reply.request.call.refusal = refusal;
  if (refusal.retryAfterSeconds !== undefined) reply.header('retry-after', String(refusal.retryAfterSeconds));
}

/** Records the per-key decision and writes its headers (draft-ietf-httpapi-ratelimit-headers). */
function recordBudget(reply: FastifyReply, decision: LimitDecision, windowMs: number): void {
  reply.request.call.budget = decision;
  reply.headers({
    'ratelimit-policy': `"per-key";q=${decision.limit};w=${Math.round(windowMs / 1000)}`,
    ratelimit: `"per-key";r=${decision.remaining};t=${decision.resetSeconds}`,
  });
}

/** What a procedure reports beyond the answer's body, written the same on both surfaces. */
export const answerWriter: AnswerWriter<FastifyReply> = {
  refused: recordRefusal,
  rateLimit: recordBudget,
  replayed: (reply) => void reply.header('idempotent-replayed', 'true'),
};

/** Readies an early refusal; a connection whose body was announced closes after it: Node would drain a trickled body first. */
export function refuseEarly(request: FastifyRequest, reply: FastifyReply, refusal: Refusal): void {
  recordRefusal(reply, refusal);
  if (announcesBody(request.headers)) reply.header('connection', 'close');
}

/**
 * The per-key budget for `calls` calls together (a REST call's, every call a /trpc request names), before the body is read; no call's
 * middleware counts again. Only calls without HTTP are counted by protectedProcedure (src/api/trpc.ts) as they run.
 */
export function takeBudget(
  request: FastifyRequest,
  reply: FastifyReply,
  limiter: Limiter | null,
  calls: number,
  refuse: (refusal: Refusal) => void,
  done: (error?: Error) => void,
): void {
  const keyId = request.call.caller?.identity?.keyId;
  if (limiter === null || keyId === undefined || calls === 0) return done();
  const decided = (decision: LimitDecision) => {
    recordBudget(reply, decision, limiter.windowMs);
    if (decision.allowed) return done();
    const refusal = keyRateLimitRefusal(decision);
    refuseEarly(request, reply, refusal);
    refuse(refusal);
  };
  const taken = limiter.take(keyId, calls);
  if (taken instanceof Promise) taken.then(decided, done);
  else decided(taken);
}

/** One procedure call, as a surface's codec decoded it. */
interface DecodedCall {
  path: string;
  type: 'query' | 'mutation';
  ctx: Context;
  /** Read when the middleware asks for it, so the key check comes before any input error. */
  getRawInput: () => Promise<unknown>;
}

/** The stages both surfaces share, made once per app; each logs a failure once (`callFailed`: calls tRPC's handler runs). */
export function callPipeline(router: AppRouter, databaseHealth: DatabaseHealth | undefined) {
  const trpc = trpcInternals<Context>(router);
  const trpcErrors = trpcErrorSenders(router);

  function callFailed(request: FastifyRequest, error: TRPCError): void {
    logFailure(request.log, getHTTPStatusCodeFromError(error), error, databaseHealth);
  }

  return {
    /** Runs a decoded call through its middleware; callbacks, not a second promise: one link per call. */
    run<T>(request: FastifyRequest, call: DecodedCall, encode: (data: unknown) => T, encodeError: (error: TRPCError) => T): Promise<T> {
      return trpc.call(call).then(encode, (cause: unknown) => {
        const error = trpc.toTRPCError(cause);
        callFailed(request, error);
        return encodeError(error);
      });
    },
    callFailed,
    /** Fastify's error handler (and `frameworkErrors`'): the answer in the request's surface's shape. */
    fastifyError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
      const answer = answerForFastifyError(error);
      logFailure(request.log, answer.status, error, databaseHealth);
      return request.call.surface === 'trpc' ? trpcErrors.send(reply, answer) : sendEnvelope(reply, answer);
    },
  };
}

export type CallPipeline = ReturnType<typeof callPipeline>;

// Answers in each surface's shape.
/** Headers every response carries: API answers are not for sniffing or for shared caches. */
export const RESPONSE_HEADERS = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' };

export function sendEnvelope(reply: FastifyReply, { status, message }: ErrorAnswer): FastifyReply {
  const envelope = errorEnvelope(status, message);
  return reply.code(envelope.status).type('application/json; charset=utf-8').send(envelope);
}

export function sendError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return sendEnvelope(reply, { status, message });
}

/** A path no route serves: 404 in the envelope, on every server and surface but /trpc. */
export function sendNoSuchResource(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendError(reply, 404, `No such resource: ${request.method} ${request.url.split('?')[0]}`);
}

/** No route for this method: 405 with `Allow` when the path is served with `allowed`, else 404. */
export function sendUnknownRoute(request: FastifyRequest, reply: FastifyReply, allowed: readonly string[]): FastifyReply {
  if (allowed.length === 0) return sendNoSuchResource(request, reply);
  reply.header('allow', allowed.join(', '));
  const [last, ...others] = [...allowed].reverse();
  const choices = others.length === 0 ? last : `${others.reverse().join(', ')} or ${last}`;
  return sendError(reply, 405, `${request.method} is not supported here; use ${choices}`);
}

const RAW_REASONS: Record<number, string> = {
  400: 'Bad Request',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};

const RAW_RESPONSE_HEADERS = Object.entries(RESPONSE_HEADERS)
  .map(([name, value]) => `${name}: ${value}\r\n`)
  .join('');

/** A whole HTTP/1.1 response for a request Node refused: a new request id and trace, since its own could not be read. */
function rawHttpResponse(
  answer: ClientErrorAnswer,
  contentType: string,
  body: string,
  headers: Readonly<Record<string, string>> = {},
): string {
  const reason = RAW_REASONS[answer.status] ?? 'Bad Request';
  const more = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return (
    `HTTP/1.1 ${answer.status} ${reason}\r\nContent-Type: ${contentType}\r\n${answer.allow ? `Allow: ${answer.allow}\r\n` : ''}` +
    `${RAW_RESPONSE_HEADERS}${more}X-Request-Id: ${randomUUID()}\r\ntraceparent: ${formatTraceparent(traceContextFor(undefined))}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${answer.isHead ? '' : body}`
  );
}

/** The envelope in a whole response, for a request Node's parser refused (Fastify's answer has another shape). */
export function rawHttpErrorResponse(answer: ClientErrorAnswer, headers?: Readonly<Record<string, string>>): string {
  return rawHttpResponse(answer, 'application/json; charset=utf-8', JSON.stringify(errorEnvelope(answer.status, answer.message)), headers);
}

/** tRPC's headers on every JSON answer (resolveResponse). */
export const TRPC_JSON_HEADERS = { vary: 'trpc-accept, accept', 'content-type': 'application/json' } as const;

const asIs = (text: string) => text;

/** Runs a send; one that throws (an unserialisable body) goes to the error handler, as Fastify's own promise handling does. */
export function sendOrFail(reply: FastifyReply, send: () => unknown): void {
  try {
    send();
  } catch (error) {
    reply.send(error);
  }
}

/**
 * Sends `Content-Type: application/json` exactly, as tRPC does: Fastify adds `; charset=utf-8` to a string without a
 * serializer. A string, in one write with the head (a Buffer would be a copy and a second chunk).
 */
export function sendTrpcJson(reply: FastifyReply, status: number, headers: Readonly<Record<string, string>>, text: string): FastifyReply {
  return reply.code(status).headers(headers).serializer(asIs).send(text);
}

/** tRPC's error shape for a request as a whole (no procedure ran), sent through Fastify or on a raw socket. */
export function trpcErrorSenders(router: AnyTRPCRouter) {
  const { requestBody } = trpcErrorShapes(router);
  return {
    send: (reply: FastifyReply, answer: ErrorAnswer): FastifyReply =>
      sendTrpcJson(reply, answer.status, TRPC_JSON_HEADERS, requestBody(answer)),
    /** A whole HTTP response for a request Node's parser refused. */
    rawResponse: (answer: ClientErrorAnswer): string => rawHttpResponse(answer, TRPC_JSON_HEADERS['content-type'], requestBody(answer)),
  };
}

// Admission, 1: who is calling, decided once per request as `request.call.caller`: an identity, or a
// refusal (401; 429 while the address is locked out; 503 when the database could not check a stored key).
// Wrong keys are limited per client address: an attempt is counted before the key is checked and given
// back when it was right, so concurrent guesses cannot all be checked before a failure counts. A key
// seen valid from an address still works while it is locked out (clients behind one NAT: docs/security.md);
// a key seen valid recently, or being checked right now, takes nothing from the budget.
interface AuthenticationOptions {
  verifier: ApiKeyVerifier;
  /** Counts failed attempts (a key sent, and wrong) per client address. */
  failureLimiter: Limiter;
  databaseHealth?: DatabaseHealth;
}

/** How many recently valid key digests are remembered (oldest forgotten first). */
const KNOWN_VALID_DIGESTS = 10_000;

class BoundedMap<V> {
  private readonly items = new Map<string, V>();
  constructor(private readonly max: number) {}
  has(key: string): boolean {
    return this.items.has(key);
  }
  get(key: string): V | undefined {
    return this.items.get(key);
  }
  set(key: string, value: V): void {
    if (this.items.has(key)) return;
    this.items.set(key, value);
    if (this.items.size > this.max) this.items.delete(this.items.keys().next().value!);
  }
  delete(key: string): void {
    this.items.delete(key);
  }
}

interface Outcome {
  identity: ApiKeyIdentity | null;
  /** Seconds until the address may try again; 0 when it was not refused. */
  retryAfterSeconds: number;
}

type Standing = LimitDecision | Promise<LimitDecision>;

interface RequestKey {
  readonly header: string;
  readonly address: string;
  readonly digest: string | null;
  readonly inFlightKey: string;
}

const plugin: FastifyPluginAsync<AuthenticationOptions> = async (app, { verifier, failureLimiter, databaseHealth }) => {
  /** Digests seen valid: an API_KEYS key's identity (fixed until a restart), null for a stored key (looked up again: revocation). */
  const knownValid = new BoundedMap<ApiKeyIdentity | null>(KNOWN_VALID_DIGESTS);
  /** `address digest` of keys seen valid from that address: they go on working while it is locked out. */
  const provenFrom = new BoundedMap<true>(KNOWN_VALID_DIGESTS);
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
      knownValid.set(digest!, verifier.matchEnvKey(digest!));
      provenFrom.set(`${address} ${digest}`, true);
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
    if (outcome.identity) provenFrom.set(`${address} ${digest}`, true);
    if (outcome.identity || outcome.retryAfterSeconds > 0) return outcome;
    knownValid.delete(digest); // revoked since
    provenFrom.delete(`${address} ${digest}`);
    const failed = await failureLimiter.take(address);
    return { identity: null, retryAfterSeconds: failed.allowed ? 0 : failed.resetSeconds };
  }

  /**
   * The address, the key's digest (null: malformed, a wrong key without a lookup) and both together. A client's
   * own connection mostly repeats its last header: then its last digest is kept. Not on a connection relaying
   * other clients (a trusted proxy's), where the header compared would be someone else's.
   */
  const lastKeyOf = new WeakMap<object, RequestKey>();
  function keyOfRequest(request: FastifyRequest, header: string): RequestKey {
    const client = clientAddress(request);
    const address = clientLimitKey(client);
    const own = client === request.socket.remoteAddress;
    const last = own ? lastKeyOf.get(request.socket) : undefined;
    if (last !== undefined && last.header === header) return last;
    const digest = digestOfHeader(header);
    const key = { header, address, digest, inFlightKey: `${address} ${digest}` };
    if (own) lastKeyOf.set(request.socket, key);
    return key;
  }

  // Callback-style: the common request (an API_KEYS key seen valid, limits in memory) is decided without a promise.
  app.addHook('onRequest', (request, _reply, done) => {
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') {
      request.call.caller = NO_KEY; // nothing to check, nothing guessed
      return done();
    }
    const { address, digest, inFlightKey } = keyOfRequest(request, header);
    const pending = digest === null || checking.size === 0 ? undefined : checking.get(inFlightKey);
    if (digest !== null && (pending || knownValid.has(digest))) {
      const standing = pending ? NOT_ASKED : failureLimiter.peek(address);
      if (!pending && !(standing instanceof Promise)) {
        if (lockedOut(standing, address, digest)) {
          request.call.caller = refusedCaller(lockedOutRefusal(standing.resetSeconds));
          return done();
        }
        // An API_KEYS key is answered at once; a stored key is looked up again (revocation) below.
        const identity = knownValid.get(digest);
        if (identity) {
          provenFrom.set(inFlightKey, true);
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

/** Registered at the root (fastify-plugin lifts encapsulation) so its hook runs for every route; `admission` registers it. */
export const authentication = fp(plugin, { name: 'authentication' });

const AUTH_REALM = 'animal-store';

/** The WWW-Authenticate challenge every 401 must carry (RFC 6750 §3): `invalid_token` only when a key was sent and refused. */
function bearerChallenge(caller: Caller | null): string {
  return caller?.refusal?.reason === 'invalid_key' ? `Bearer realm="${AUTH_REALM}", error="invalid_token"` : `Bearer realm="${AUTH_REALM}"`;
}

// Admission, 2: CORS for both surfaces. A preflight from an origin in CORS_ORIGINS (empty: off) is
// answered by @fastify/cors; any other gets 400 in the surface's error shape naming CORS_ORIGINS, so the
// developer reading the browser's network tab sees what to set (not tRPC's 415 or REST's 405).
/** How long a browser may keep a preflight's answer, in seconds (Chromium's cap). */
export const PREFLIGHT_MAX_AGE_SECONDS = 7200;

const ALLOWED_HEADERS = ['authorization', 'content-type', 'idempotency-key', 'x-request-id', 'traceparent'];
const EXPOSED_HEADERS = [
  'x-request-id',
  'traceparent',
  'ratelimit',
  'ratelimit-policy',
  'retry-after',
  'deprecation',
  'sunset',
  'link',
  'idempotent-replayed',
];

/** Why a preflight from `origin` is refused, for the developer who reads it. */
function preflightRefusal(origin: string, allowed: readonly string[]): ErrorAnswer {
  const why =
    allowed.length === 0
      ? 'CORS is off on this service (CORS_ORIGINS is empty)'
      : `${origin} is not in this service's CORS_ORIGINS (${allowed.join(', ')})`;
  return {
    status: 400,
    message: `Cross-origin call refused: ${why}. Add ${origin} to CORS_ORIGINS, or call the service from the page's own origin through a proxy.`,
  };
}

const isPreflight = (request: FastifyRequest) =>
  request.method === 'OPTIONS' &&
  typeof request.headers.origin === 'string' &&
  request.headers['access-control-request-method'] !== undefined;

interface CorsOptions {
  origins: readonly string[];
  /** The methods allowed: those the service answers anywhere (served-methods.ts, methodsServedAnywhere). */
  methods: readonly string[];
  sendTrpcError: (reply: FastifyReply, answer: ErrorAnswer) => FastifyReply;
}

const corsPlugin: FastifyPluginAsync<CorsOptions> = async (app, { origins, methods, sendTrpcError }) => {
  const listed = new Set(origins);
  app.addHook('onRequest', (request, reply, done) => {
    if (!isPreflight(request) || listed.has(request.headers.origin!)) return done();
    const answer = preflightRefusal(request.headers.origin!, origins);
    if (request.call.surface === 'trpc') sendTrpcError(reply, answer);
    else sendEnvelope(reply, answer);
  });
  if (origins.length === 0) return;
  await app.register(cors, {
    origin: [...origins],
    methods: [...methods],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
  });
};

// Admission, 3: what every answer carries, and how it is written.

interface AdmissionOptions {
  authentication: AuthenticationOptions;
  cors: CorsOptions;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Starts the stop's drain (src/main.ts): /readyz 503, `Connection: close` on every answer. Also on close. */
    beginDraining(): void;
    isDraining(): boolean;
  }
}

/**
 * The hooks every request passes, in order: who is calling, a refused preflight, the headers every answer
 * has (and a compressed body's 415); on the way out, a 401's Bearer challenge, `Connection: close` when
 * due, and the write at the turn's end. Callback-style hooks: an async one costs a promise per request.
 */
export const admission = fp<AdmissionOptions>(
  async (app, { authentication: authenticationOptions, cors: corsOptions }) => {
    let draining = false;
    app.decorate('beginDraining', () => {
      draining = true;
    });
    app.decorate('isDraining', () => draining);
    app.addHook('preClose', async () => {
      draining = true;
    });
    await app.register(authentication, authenticationOptions);
    await app.register(fp(corsPlugin, { name: 'cors' }), corsOptions);
    app.addHook('onRequest', (request, reply, done) => {
      reply.headers(RESPONSE_HEADERS);
      reply.header('x-request-id', request.id);
      reply.header('traceparent', formatTraceparent(traceContextOf(request)));
      // A compressed body from a caller with a key: 415 before it is read. Without a key the surface answers 401 first.
      if (request.headers['content-encoding'] !== undefined && request.call.caller?.identity) {
        const refusal = bodyEncodingError(request.method, request.headers);
        if (refusal !== null) {
          reply.header('accept-encoding', 'identity').header('connection', 'close');
          return done(refusal);
        }
      }
      done();
    });
    app.addHook('onSend', (request, reply, payload, done) => {
      // Every 401, on either surface, carries the Bearer challenge. tRPC's handler hands Fastify a
      // Response, whose status Fastify copies to the reply only after this hook.
      if (reply.statusCode === 401 || (payload instanceof Response && payload.status === 401)) {
        reply.header('www-authenticate', bearerChallenge(request.call.caller));
      }
      // A request refused for want of a valid key ends its connection too (docs/security.md): a flood of
      // keyless requests pays a new connection for each.
      if (draining || (request.call.caller?.refusal && request.call.refusal !== null)) reply.header('connection', 'close');
      // Every answer of this turn goes out at its end, together (connections.ts, writeAtTurnEnd).
      writeAtTurnEnd(reply, payload, done);
    });
  },
  { name: 'admission' },
);
