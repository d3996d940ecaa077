// Request limits: a fixed-window counter per key (an API key id, or a client address), kept in
// this process's memory. Each instance counts on its own, so behind N instances a caller gets up
// to N times the limit (README, "Limits"); a shared counter would cost a database write per request.

export interface LimitDecision {
  allowed: boolean;
  limit: number;
  /** Requests left in the current window after this one. */
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/** Beyond this many distinct keys in one window new keys are not tracked (memory stays bounded). */
const MAX_TRACKED_KEYS = 100_000;

export class FixedWindowLimiter {
  private windowStart = 0;
  private counts = new Map<string, number>();

  constructor(
    readonly limit: number,
    readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request for `key` and says whether it is within the limit. */
  hit(key: string): LimitDecision {
    this.roll();
    const count = (this.counts.get(key) ?? 0) + 1;
    if (this.counts.has(key) || this.counts.size < MAX_TRACKED_KEYS) this.counts.set(key, count);
    return this.decision(count);
  }

  /** Says whether one more request for `key` would be within the limit, without counting it. */
  peek(key: string): LimitDecision {
    this.roll();
    const count = this.counts.get(key) ?? 0;
    return { ...this.decision(count + 1), remaining: Math.max(0, this.limit - count) };
  }

  /** Windows are aligned to multiples of windowMs, so they are the same in every instance. */
  private roll(): void {
    const now = this.now();
    const windowStart = now - (now % this.windowMs);
    if (windowStart !== this.windowStart) {
      this.windowStart = windowStart;
      this.counts = new Map();
    }
  }

  private decision(count: number): LimitDecision {
    const resetSeconds = Math.max(1, Math.ceil((this.windowStart + this.windowMs - this.now()) / 1000));
    return { allowed: count <= this.limit, limit: this.limit, remaining: Math.max(0, this.limit - count), resetSeconds };
  }
}

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
