// The RateLimit headers of a limit's decision, on both surfaces: the per-key limit's on every
// authenticated call (src/app.ts, from what the procedure middleware reports to its context).
import type { LimitDecision } from '../limits/fixed-window-limiter.js';

/**
 * The IETF draft's headers (draft-ietf-httpapi-ratelimit-headers): the policy, and what is left of
 * it; plus Retry-After (RFC 9110) when the request was refused.
 */
export function rateLimitHeaders(policy: string, decision: LimitDecision, windowMs: number): Record<string, string> {
  const headers: Record<string, string> = {
    'ratelimit-policy': `"${policy}";q=${decision.limit};w=${Math.round(windowMs / 1000)}`,
    ratelimit: `"${policy}";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
  if (!decision.allowed) headers['retry-after'] = String(decision.resetSeconds);
  return headers;
}
