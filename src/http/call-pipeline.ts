// What both surfaces do with a call's decisions, in one place: a refusal recorded on the request
// (the metrics and the log read `request.refusal`, never the status) with its Retry-After, written
// here only; the per-key limit's decision (`request.budget`) with its RateLimit headers, written
// here only; and the early answer's connection rule. The procedures report through `answerWriter`
// (src/api/context.ts), the surfaces' gates call `refuseEarly`.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AnswerWriter } from '../api/context.js';
import type { Refusal } from '../api/refusals.js';
import type { LimitDecision } from '../limits/fixed-window-limiter.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The refusal this request was answered with, recorded where it was decided (metrics and log read it). */
    refusal: Refusal | null;
    /** The per-key limit's decision for this request, taken once (src/api/trpc.ts; a batch's in src/http/trpc-plugin.ts). */
    budget: LimitDecision | null;
  }
}

/** Records why the request was refused, and when it may be tried again (Retry-After, RFC 9110). */
function recordRefusal(reply: FastifyReply, refusal: Refusal): void {
  reply.request.refusal = refusal;
  if (refusal.retryAfterSeconds !== undefined) reply.header('retry-after', String(refusal.retryAfterSeconds));
}

/**
 * Records the request's per-key decision and writes the IETF draft's headers
 * (draft-ietf-httpapi-ratelimit-headers): the policy, and what is left of it. A refused decision's
 * Retry-After comes with its refusal (`recordRefusal`).
 */
export function recordBudget(reply: FastifyReply, decision: LimitDecision, windowMs: number): void {
  reply.request.budget = decision;
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
