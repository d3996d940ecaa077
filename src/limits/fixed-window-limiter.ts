// Fixed-window request counters in memory (one instance's counts); redis-limiter.ts shares them.
// Not @fastify/rate-limit: a wrong-key guess is counted before the check and given back, and both
// surfaces share one budget. @see docs/architecture.md "Where we depart from a library, and why"

export interface LimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/** Calls may answer synchronously (memory) or not (Redis). */
export interface Limiter {
  readonly limit: number;
  readonly windowMs: number;
  take(key: string, count?: number): LimitDecision | Promise<LimitDecision>;
  peek(key: string): LimitDecision | Promise<LimitDecision>;
  giveBack(key: string): void | Promise<void>;
}

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
      // Re-inserted at the end: the memory bound forgets the oldest, so a flood cannot hide a new key.
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
