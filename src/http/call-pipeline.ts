// A request's decisions (`request.call`): made at its arrival (request-logging.ts), filled where each fact is
// first known, read by the log and the metrics once it is answered: no decision is re-derived from the status.
// Also the stages both surfaces share, and the writing of RateLimit and a refusal's Retry-After.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { TRPCError } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import type { AnswerWriter, Context } from '../api/trpc.js';
import { answerForFastifyError } from '../api/errors.js';
import { keyRateLimitRefusal, keyRefusal, type Caller, type Refusal } from '../api/refusals.js';
import type { AppRouter } from '../api/root-router.js';
import { trpcInternals, type ProcedureInfo } from '../api/trpc-internals.js';
import type { LimitDecision, Limiter } from '../limits/fixed-window-limiter.js';
import type { DatabaseHealth } from '../observability/dependencies.js';
import { ROUTE_LABELS, type ServiceMetrics, type Surface } from '../observability/metrics.js';
import { sendEnvelope, trpcErrorSenders } from './error-senders.js';
import { logFailure } from './failure-log.js';
import { REST_BASE_PATH } from './openapi-document.js';
import { announcesBody } from './request-bodies.js';

export const TRPC_PREFIX = '/trpc';

/** How /trpc classified a request from its head (trpc-plugin.ts, classify). */
export interface TrpcRequestKind {
  /** `none`: tRPC answers without running a call; `call`: one call; `batch`: several calls, or a stream. */
  readonly kind: 'none' | 'call' | 'batch';
  readonly batched: boolean;
  readonly procedure: ProcedureInfo | undefined;
  /** The direct way may answer it (`call` only; unless the body starts with a byte order mark). */
  readonly direct: boolean;
  /** Every call is of the type its method runs (GET: queries; POST with JSON: mutations). */
  readonly plain: boolean;
}

/** What was decided about one request, by the step that decided it. */
export interface CallDecision {
  readonly surface: Surface;
  /** What it asked for, as a pattern (`/v1/pets/{petId}`, `/trpc/pets.list`); null: the Fastify route's, if any. */
  route: string | null;
  /** The procedures a /trpc request named, each a real one (a batch: several); null elsewhere. */
  procedures: readonly string[] | null;
  /** How /trpc classified it from its head (trpc-plugin.ts); null elsewhere. */
  trpc: TrpcRequestKind | null;
  /** Who is calling (authentication.ts); null only when Fastify refused the request before its hooks. */
  caller: Caller | null;
  budget: LimitDecision | null;
  refusal: Refusal | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    call: CallDecision;
  }
}

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
 * Fastify's `rewriteUrl`. Its router refuses a path nothing can decode (`%ZZ`, bytes not UTF-8) with 400 before any
 * hook, so before the key check; its `%`s are escaped as `%25` instead, and it routes like any other.
 */
export function escapeUndecodablePath({ url = '/' }: { url?: string }): string {
  const queryStart = url.indexOf('?');
  const path = queryStart === -1 ? url : url.slice(0, queryStart);
  return !path.includes('%') || decodable(path) ? url : path.replaceAll('%', '%25') + url.slice(path.length);
}

export function newCall(url: string): CallDecision {
  return { surface: surfaceOf(url), route: null, procedures: null, trpc: null, caller: null, budget: null, refusal: null };
}

/** The route a request was for, for the log and the metrics: the surface's pattern, else the Fastify route, else null. */
export function routeOf(request: FastifyRequest): string | null {
  return request.call.route ?? request.routeOptions.url ?? null;
}

const NO_KEY = keyRefusal(false);

/** The refusal a request gets for who is calling (authentication decided it), or null. */
export function callerRefusal(call: CallDecision): Refusal | null {
  return call.caller === null ? NO_KEY : call.caller.refusal;
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
 * The per-key budget for `calls` calls together (a REST call's, a /trpc call's, a plain batch's), before the body is read; no call's middleware
 * counts again. Other batches' calls, and calls without HTTP, are counted by protectedProcedure (src/api/trpc.ts) as they run.
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

// What one answered request adds to the metrics, read from its decisions; called by the request
// log's controller (request-logging.ts), so it costs no hook of its own.

/** HTTP methods kept as label values; anything else Node's parser lets through is `OTHER`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export type RequestRecorder = (request: FastifyRequest, reply: FastifyReply, elapsedMs: number) => void;

export function requestRecorder(metrics: ServiceMetrics): RequestRecorder {
  /** The procedure a /trpc request named (a batch: `batch`, each call counted), or the route pattern: never the URL. */
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

  /** Refusals by the reason recorded where they were decided; idempotent replays by their header. */
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
