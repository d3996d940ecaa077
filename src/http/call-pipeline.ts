// A request's decisions, in one typed value (`request.call`, a CallDecision) born with the request
// (src/http/request-logging.ts makes it when Fastify reports the request's arrival, before any hook)
// and filled where each fact is first known: the surface, from the target; who is calling
// (authentication.ts); what was asked (the surfaces: the route pattern, the procedures named); the
// per-key decision and a refusal (here: the only writers of RateLimit and Retry-After). The log and
// the metrics read it once the request is answered; nothing re-derives a decision from the status.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AnswerWriter } from '../api/context.js';
import { keyRefusal, type Caller, type Refusal } from '../api/refusals.js';
import type { LimitDecision } from '../limits/fixed-window-limiter.js';
import type { Surface } from '../observability/metrics.js';
import { REST_BASE_PATH } from './openapi-document.js';

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
export function recordBudget(reply: FastifyReply, decision: LimitDecision, windowMs: number): void {
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
  const { headers } = request;
  const announcesBody =
    headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
  if (announcesBody) reply.header('connection', 'close');
}
