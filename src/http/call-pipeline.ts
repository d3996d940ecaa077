// The call pipeline both surfaces share. Admission: who is calling (the caller's refusal), the per-key
// budget taken once per request (`takeBudget`), every refusal recorded once with its Retry-After
// (`recordRefusal`). The run: a decoded call through its procedure's middleware chain, a failure
// mapped and logged once. And how an answer looks on each surface: the envelope (REST and the rest) or
// tRPC's error shape, through Fastify or as a whole response on a raw socket.
import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { AnyTRPCRouter, TRPCError } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import type { AnswerWriter, Context } from '../api/trpc.js';
import { answerForFastifyError, errorEnvelope, trpcErrorShapes, type ClientErrorAnswer, type ErrorAnswer } from '../api/errors.js';
import { keyRateLimitRefusal, keyRefusal, type Refusal } from '../api/refusals.js';
import type { AppRouter } from '../api/root-router.js';
import { trpcInternals } from '../api/trpc-internals.js';
import type { LimitDecision, Limiter } from '../limits/fixed-window-limiter.js';
import type { DatabaseHealth } from '../observability/dependencies.js';
import { logFailure } from './failure-log.js';
import { announcesBody } from './request-bodies.js';
import { formatTraceparent, traceContextFor, type CallDecision } from './request-record.js';

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
