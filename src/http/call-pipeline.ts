// A request's decisions, in one typed value (`request.call`, a CallDecision) born with the request
// (src/http/request-logging.ts makes it when Fastify reports the request's arrival, before any hook)
// and filled where each fact is first known: the surface, from the target; who is calling
// (authentication.ts); what was asked (the surfaces: the route pattern, the procedures named); the
// per-key decision and a refusal (here: the only writers of RateLimit and Retry-After). The log and
// the metrics (`requestRecorder`, below) read it once the request is answered; nothing re-derives a
// decision from the status.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { TRPCError } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import type { AnswerWriter, Context } from '../api/context.js';
import { answerForFastifyError } from '../api/errors.js';
import { keyRateLimitRefusal, keyRefusal, type Caller, type Refusal } from '../api/refusals.js';
import type { AppRouter } from '../api/root-router.js';
import { trpcInternals } from '../api/trpc-internals.js';
import type { LimitDecision, Limiter } from '../limits/fixed-window-limiter.js';
import type { DatabaseHealth } from '../observability/dependencies.js';
import { ROUTE_LABELS, type ServiceMetrics, type Surface } from '../observability/metrics.js';
import { sendEnvelope, trpcErrorSenders } from './error-senders.js';
import { logFailure } from './failure-log.js';
import { REST_BASE_PATH } from './openapi-document.js';
import { announcesBody } from './request-bodies.js';

/** Where the typed tRPC surface is served. */
export const TRPC_PREFIX = '/trpc';

/** What was decided about one request, by the step that decided it. */
export interface CallDecision {
  /** The surface its target is under (`surfaceOf`). */
  readonly surface: Surface;
  /** What it asked for, as a pattern (`/v1/pets/{petId}`, `/trpc/pets.list`); null: the Fastify route's, if any. */
  route: string | null;
  /** The procedures a /trpc request named, each a real one (a batch: several); null elsewhere. */
  procedures: readonly string[] | null;
  /** Who is calling (authentication.ts); null only when Fastify refused the request before its hooks. */
  caller: Caller | null;
  /** The per-key limit's decision, taken once (`recordBudget`). */
  budget: LimitDecision | null;
  /** Why it was refused, recorded where that was decided (`recordRefusal`). */
  refusal: Refusal | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** This request's decisions (src/http/call-pipeline.ts). */
    call: CallDecision;
  }
}

/** Whether `target` (a path, with or without its query) is `prefix` or under it. */
function isUnder(target: string, prefix: string): boolean {
  if (!target.startsWith(prefix)) return false;
  const next = target[prefix.length];
  return next === undefined || next === '/' || next === '?';
}

/** The surface a request target is under: the one place that tells /trpc from /v1 from the rest. */
export function surfaceOf(target: string): Surface {
  if (isUnder(target, TRPC_PREFIX)) return 'trpc';
  if (isUnder(target, REST_BASE_PATH)) return 'rest';
  return 'other';
}

/** Whether a percent-encoded text decodes (decodeURIComponent): the one test of an encoding's validity. */
export function decodable(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Fastify's `rewriteUrl`: a path with an encoding nothing can decode (`%ZZ`, bytes that are not
 * UTF-8) keeps it as sent, like every encoding that is not of an unreserved character (the REST
 * paths' rule, rest-routes.ts `decodeUnreserved`). Fastify's router would refuse such a path with
 * 400 before any hook runs, so before the key check; here every `%` of the path is escaped as `%25`,
 * which routes like any other: no literal segment matches it (404) and no integer is made of it
 * (400, after the key check).
 */
export function escapeUndecodablePath({ url = '/' }: { url?: string }): string {
  const queryStart = url.indexOf('?');
  const path = queryStart === -1 ? url : url.slice(0, queryStart);
  return !path.includes('%') || decodable(path) ? url : path.replaceAll('%', '%25') + url.slice(path.length);
}

/** A new request's decisions: only its surface is known. */
export function newCall(url: string): CallDecision {
  return { surface: surfaceOf(url), route: null, procedures: null, caller: null, budget: null, refusal: null };
}

/** The route a request was for, for the log and the metrics: the surface's pattern, else the Fastify route, else null. */
export function routeOf(request: FastifyRequest): string | null {
  return request.call.route ?? request.routeOptions.url ?? null;
}

const NO_KEY = keyRefusal(false);

/**
 * The refusal a request gets before its body is read for who is calling, or null: the caller's own
 * (authentication decided it). The surfaces' gates call it; protectedProcedure refuses the same way.
 */
export function callerRefusal(call: CallDecision): Refusal | null {
  return call.caller === null ? NO_KEY : call.caller.refusal;
}

/** Records why the request was refused, and when it may be tried again (Retry-After, RFC 9110). */
export function recordRefusal(reply: FastifyReply, refusal: Refusal): void {
  reply.request.call.refusal = refusal;
  if (refusal.retryAfterSeconds !== undefined) reply.header('retry-after', String(refusal.retryAfterSeconds));
}

/**
 * Records the request's per-key decision and writes the IETF draft's headers
 * (draft-ietf-httpapi-ratelimit-headers): the policy, and what is left of it. A refused decision's
 * Retry-After comes with its refusal (`recordRefusal`).
 */
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

/**
 * Readies the answer to a request refused before its body is read: the refusal recorded, and Node
 * asked to close the connection once the answer is sent, so that the rest of the body is never read
 * (a client trickling a large body would otherwise hold the connection while Node drains it to reach
 * the next request). The surface then sends its own body.
 */
export function refuseEarly(request: FastifyRequest, reply: FastifyReply, refusal: Refusal): void {
  recordRefusal(reply, refusal);
  if (announcesBody(request.headers)) reply.header('connection', 'close');
}

/**
 * The per-key budget taken at admission, before the body is read, for `calls` calls together (a
 * plain tRPC batch's): recorded with its RateLimit headers (the context carries the decision, so
 * no call's middleware counts again); past it, refused early and `refuse` sends the answer. Every
 * other call is counted by protectedProcedure (src/api/trpc.ts) as it runs, which is when tRPC's
 * own handler would count it (test/trpc-wire.test.ts compares the RateLimit headers).
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
  /** The call's raw input, read when the middleware that runs before input asks for it. */
  getRawInput: () => Promise<unknown>;
}

/**
 * The stages both surfaces share, made once per app (src/app.ts) and handed to each surface's
 * codec: `run` (the procedure through its middleware chain, tRPC's caller path; a failure logged
 * once, here), `callFailed` (the same log for calls tRPC's own handler runs), and `fastifyError`
 * (an error Fastify raised, answered in the shape of the request's surface and logged once).
 */
export function callPipeline(router: AppRouter, databaseHealth: DatabaseHealth | undefined) {
  const trpc = trpcInternals<Context>(router);
  const trpcErrors = trpcErrorSenders(router);

  function callFailed(request: FastifyRequest, error: TRPCError): void {
    logFailure(request.log, getHTTPStatusCodeFromError(error), error, databaseHealth);
  }

  return {
    /**
     * Runs a decoded call and hands its outcome to the codec: `encode` its data, or `encodeError`
     * its TRPCError, logged here first. (Callbacks, not a second promise: one link per call.)
     */
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

// ---------------------------------------------------------------------------------------------
// What one answered request adds to the metrics (src/observability/metrics.ts), read from its
// decisions once it has been sent; called by the request log's controller (request-logging.ts), so
// it costs no hook of its own. The refusals (401, 429, 503) are counted by the reason recorded
// where each was decided, never re-derived from the status; idempotent replays by their header.

/** HTTP methods kept as label values; anything else Node's parser lets through is `OTHER`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Called once a request is answered, with the time it took in milliseconds. */
export type RequestRecorder = (request: FastifyRequest, reply: FastifyReply, elapsedMs: number) => void;

export function requestRecorder(metrics: ServiceMetrics): RequestRecorder {
  /**
   * The route label: the procedure a /trpc request named (a batch: `batch`, and each of its calls
   * counted), or the route pattern (routeOf), never the URL: bounded either way.
   */
  function routeLabel(request: FastifyRequest): string {
    const { surface, procedures } = request.call;
    if (surface === 'trpc') {
      if (procedures === null) return ROUTE_LABELS.unmatched;
      if (procedures.length === 1) return procedures[0]!;
      for (const procedure of procedures) metrics.batchedCall(procedure);
      return ROUTE_LABELS.batch;
    }
    return routeOf(request) ?? ROUTE_LABELS.unmatched;
  }

  /** Refusals and replays, each in its own counter (see the top of this file). */
  function countOutcome(surface: Surface, request: FastifyRequest, reply: FastifyReply, status: number): void {
    const refusal = request.call.refusal;
    if (refusal !== null) {
      const reason = refusal.reason;
      if (reason === 'missing_key' || reason === 'invalid_key') metrics.authenticationFailed(surface, reason);
      else if (reason === 'auth_failures' || reason === 'per_key') metrics.rateLimitRefused(surface, reason);
      else if (reason === 'database_unavailable') metrics.databaseUnavailable(surface);
    } else if (status < 300 && request.method === 'POST' && reply.getHeader('idempotent-replayed') === 'true') {
      metrics.idempotentReplay(surface);
    }
  }

  return (request, reply, elapsedMs) => {
    const surface = request.call.surface;
    const status = reply.statusCode;
    metrics.observeRequest({
      surface,
      route: routeLabel(request),
      method: METHODS.has(request.method) ? request.method : 'OTHER',
      statusCode: status,
      durationSeconds: elapsedMs / 1000,
    });
    countOutcome(surface, request, reply, status);
  };
}
