// The RateLimit headers of the per-key limit's decision, on both surfaces: written here only, once
// per request, where the decision is taken (the procedure middleware reports it to its context,
// src/app.ts; a tRPC batch's is taken before its body is read, src/http/trpc-plugin.ts).
import type { FastifyReply } from 'fastify';
import type { LimitDecision } from '../limits/fixed-window-limiter.js';

/** Records the request's per-key decision (`request.budget`) and writes its headers. */
export function setRateLimitHeaders(reply: FastifyReply, decision: LimitDecision, windowMs: number): void {
  reply.request.budget = decision;
  reply.headers(rateLimitHeaders('per-key', decision, windowMs));
}

/**
 * The IETF draft's headers (draft-ietf-httpapi-ratelimit-headers): the policy, and what is left of
 * it; plus Retry-After (RFC 9110) when the request was refused.
 */
function rateLimitHeaders(policy: string, decision: LimitDecision, windowMs: number): Record<string, string> {
  const headers: Record<string, string> = {
    'ratelimit-policy': `"${policy}";q=${decision.limit};w=${Math.round(windowMs / 1000)}`,
    ratelimit: `"${policy}";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
  if (!decision.allowed) headers['retry-after'] = String(decision.resetSeconds);
  return headers;
}
