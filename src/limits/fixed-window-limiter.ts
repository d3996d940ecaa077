// Request limits: a fixed-window counter per key (an API key id, or a client address). A key's
// window starts with its first request and lasts `windowMs`; within it at most `limit` requests
// are allowed. This module is the in-memory store (one instance's own counts); with REDIS_URL the
// budgets live in Redis and every instance leases them (redis-limiter.ts). Both implement Limiter.
//
// Why not @fastify/rate-limit or rate-limiter-flexible: the wrong-key budget is taken before a key
// is checked and given back when it was right (src/http/authentication.ts), and @fastify/rate-limit's
// stores cannot give back; its plugin answers refusals itself, while ours must answer in tRPC's
// error shape on /trpc and share one budget between both surfaces; rate-limiter-flexible's memory
// store keeps a timer per key with no bound on their number. What is left is a counter: a Map here,
// leases of a hash per window in Redis (leased-limiter.ts).

export interface LimitDecision {
  allowed: boolean;
  limit: number;
  /** Requests left in the current window after this one. */
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/** A counter of requests per key. Calls may answer synchronously (memory) or not (Redis). */
export interface Limiter {
  readonly limit: number;
  readonly windowMs: number;
  /** Counts `count` requests (default one) for `key` and says whether they are all within the limit. */
  take(key: string, count?: number): LimitDecision | Promise<LimitDecision>;
  /** Says whether one more request for `key` would be within the limit, without counting it. */
  peek(key: string): LimitDecision | Promise<LimitDecision>;
  /** Takes back one request counted by `take` (it turned out not to count). */
  giveBack(key: string): void | Promise<void>;
}

/** By default at most this many keys are tracked; past it the oldest windows are forgotten. */
const MAX_TRACKED_KEYS = 100_000;

interface Window {
  count: number;
  resetAt: number;
}

function decision(limit: number, count: number, resetInMs: number): LimitDecision {
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    resetSeconds: Math.max(1, Math.ceil(resetInMs / 1000)),
  };
}

export class FixedWindowLimiter implements Limiter {
  /** In the order the windows started (a Map keeps insertion order): the first is the oldest. */
  private windows = new Map<string, Window>();

  constructor(
    readonly limit: number,
    readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = MAX_TRACKED_KEYS,
  ) {}

  take(key: string, count = 1): LimitDecision {
    const now = this.now();
    let window = this.windows.get(key);
    if (!window || window.resetAt <= now) {
      // A new window goes to the end of the order; the memory bound forgets the oldest, never
      // the newest, so a flood of new addresses cannot make a new one go uncounted.
      if (window) this.windows.delete(key);
      window = { count: 0, resetAt: now + this.windowMs };
      this.windows.set(key, window);
      this.forgetExpired(now);
    }
    window.count += count;
    return decision(this.limit, window.count, window.resetAt - now);
  }

  peek(key: string): LimitDecision {
    const now = this.now();
    const window = this.windows.get(key);
    const live = window && window.resetAt > now ? window : undefined;
    const next = decision(this.limit, (live?.count ?? 0) + 1, live ? live.resetAt - now : this.windowMs);
    return { ...next, remaining: Math.max(0, this.limit - (live?.count ?? 0)) };
  }

  giveBack(key: string): void {
    const window = this.windows.get(key);
    if (window && window.count > 0) window.count -= 1;
  }

  /** How many keys are tracked now (for tests of the memory bound). */
  get trackedKeys(): number {
    return this.windows.size;
  }

  private forgetExpired(now: number): void {
    for (const [key, window] of this.windows) {
      if (this.windows.size <= this.maxKeys && window.resetAt > now) break;
      this.windows.delete(key);
    }
  }
}
