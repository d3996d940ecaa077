// Shared limits' local half: each instance leases chunks of a key's window budget from the store
// (redis-limiter.ts) and spends them here, mostly without a round trip; alone while the store is away.
// @see docs/security.md "Across instances"
import type { LimitDecision, Limiter } from './fixed-window-limiter.js';

/** The store also grants at most 1/16 of what is left (redis-limiter.ts). */
const LEASE_UNITS = 100;
const RELEASE_AFTER_MS = 1_000;
const ASK_AGAIN_AFTER_MS = 1_000;
const REFRESH_AFTER_MS = 1_000;
const MAX_TRACKED_KEYS = 100_000;

export interface Lease {
  granted: number;
  taken: number;
  ttlMs: number;
}

/** Each call answers undefined when the store does not answer. */
export interface LeaseStore {
  lease(key: string, carry: number, want: number, need: number, limit: number, windowMs: number): Promise<Lease | undefined>;
  release(key: string, keep: number): Promise<void>;
  /** lease() granting nothing, sent even while the store counts as not answering (on reconnection). */
  carry(key: string, units: number, windowMs: number): Promise<Lease | undefined>;
}

interface Window {
  resetAt: number;
  served: number;
  held: number;
  taken: number;
  takenAt: number;
  refusedUntil: number;
  alone: boolean;
  lastUsed: number;
  pending: Promise<void> | null;
}

export class LeasedLimiter implements Limiter {
  private readonly windows = new Map<string, Window>();
  private readonly holding = new Map<string, Window>();
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly store: LeaseStore,
    readonly limit: number,
    readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = MAX_TRACKED_KEYS,
  ) {
    this.sweep = setInterval(() => this.releaseUnused(), RELEASE_AFTER_MS).unref();
  }

  /** A tRPC batch's calls counted together: all of them, or none. */
  take(key: string, count = 1): LimitDecision | Promise<LimitDecision> {
    const now = this.now();
    const window = this.windowOf(key, now);
    if (window.held - window.served >= count) return this.spend(key, window, now, count);
    if (window.refusedUntil > now) return this.refused(window, now);
    return this.takeAfterLease(key, count);
  }

  peek(key: string): LimitDecision {
    const now = this.now();
    const window = this.windows.get(key);
    if (!window || window.resetAt <= now) return this.answer(true, this.limit, this.windowMs);
    if (window.served >= window.held && window.refusedUntil > now) return this.answer(false, 0, window.resetAt - now);
    const left = this.left(window);
    return this.answer(left > 0, left, window.resetAt - now);
  }

  giveBack(key: string): void {
    const window = this.windows.get(key);
    if (!window || window.served === 0) return;
    window.served -= 1;
    if (window.served < window.held) this.holding.set(key, window);
  }

  /** On every (re)connection: the store may have come back empty. */
  async carryAll(): Promise<void> {
    const now = this.now();
    const live = [...this.windows].filter(([, window]) => window.resetAt > now && Math.max(window.held, window.served) > 0);
    await Promise.all(
      live.map(async ([key, window]) => {
        const lease = await this.store.carry(key, Math.max(window.held, window.served), window.resetAt - now);
        if (lease) window.taken = lease.taken;
      }),
    );
  }

  async close(): Promise<void> {
    clearInterval(this.sweep);
    const now = this.now();
    const unused = [...this.holding].filter(([, window]) => window.resetAt > now && window.served < window.held);
    await Promise.all(unused.map(([key, window]) => this.giveBackUnused(key, window)));
    this.holding.clear();
  }

  private async takeAfterLease(key: string, count: number): Promise<LimitDecision> {
    // Requests waiting together for one lease go round again when those before them spent it.
    for (let asked = false; ; asked = true) {
      const now = this.now();
      const window = this.windowOf(key, now);
      if (window.held - window.served >= count) return this.spend(key, window, now, count);
      if (window.refusedUntil > now) return this.refused(window, now);
      if (asked && window.alone) return this.countAlone(window, now, count);
      await (window.pending ??= this.lease(key, window, count));
    }
  }

  private async lease(key: string, window: Window, count: number): Promise<void> {
    const sentAt = this.now();
    try {
      const carry = Math.max(window.held, window.served);
      const need = Math.max(1, count - Math.max(0, window.held - window.served));
      const lease = await this.store.lease(key, carry, LEASE_UNITS, need, this.limit, Math.max(1, window.resetAt - sentAt));
      if (!lease) {
        window.alone = true;
        return;
      }
      window.alone = false;
      window.held = carry + lease.granted;
      window.taken = lease.taken;
      window.takenAt = sentAt;
      // From when the lease was asked: this window never ends after the store's.
      window.resetAt = sentAt + lease.ttlMs;
      if (lease.granted > 0) this.holding.set(key, window);
      if (lease.taken >= this.limit) window.refusedUntil = Math.min(window.resetAt, this.now() + ASK_AGAIN_AFTER_MS);
    } finally {
      window.pending = null;
    }
  }

  private spend(key: string, window: Window, now: number, count: number): LimitDecision {
    window.served += count;
    window.lastUsed = now;
    if (now - window.takenAt >= REFRESH_AFTER_MS) this.refresh(key, window, now);
    return this.answer(true, this.left(window), window.resetAt - now);
  }

  private refresh(key: string, window: Window, now: number): void {
    window.takenAt = now;
    void this.store.lease(key, Math.max(window.held, window.served), 0, 0, this.limit, Math.max(1, window.resetAt - now)).then((lease) => {
      if (lease) window.taken = lease.taken;
    });
  }

  private refused(window: Window, now: number): LimitDecision {
    return this.answer(false, 0, window.resetAt - now);
  }

  private countAlone(window: Window, now: number, count: number): LimitDecision {
    if (window.served + count > this.limit) return this.refused(window, now);
    window.served += count;
    return this.answer(true, this.limit - window.served, window.resetAt - now);
  }

  private left(window: Window): number {
    if (window.alone) return Math.max(0, this.limit - window.served);
    return Math.max(0, this.limit - window.taken) + Math.max(0, window.held - window.served);
  }

  private answer(allowed: boolean, remaining: number, resetInMs: number): LimitDecision {
    return { allowed, limit: this.limit, remaining, resetSeconds: Math.max(1, Math.ceil(resetInMs / 1000)) };
  }

  private windowOf(key: string, now: number): Window {
    let window = this.windows.get(key);
    if (window && window.resetAt > now) return window;
    if (window) {
      this.windows.delete(key);
      this.holding.delete(key);
    }
    window = {
      resetAt: now + this.windowMs,
      served: 0,
      held: 0,
      taken: 0,
      takenAt: now,
      refusedUntil: 0,
      alone: false,
      lastUsed: now,
      pending: null,
    };
    this.windows.set(key, window);
    this.forgetExpired(now);
    return window;
  }

  private releaseUnused(): void {
    const now = this.now();
    for (const [key, window] of this.holding) {
      if (window.resetAt <= now || window.served >= window.held) {
        this.holding.delete(key);
      } else if (now - window.lastUsed >= RELEASE_AFTER_MS && window.pending === null) {
        this.holding.delete(key);
        void this.giveBackUnused(key, window);
      }
    }
  }

  private giveBackUnused(key: string, window: Window): Promise<void> {
    window.taken -= window.held - window.served;
    window.held = window.served;
    return this.store.release(key, window.served);
  }

  private forgetExpired(now: number): void {
    for (const [key, window] of this.windows) {
      if (this.windows.size <= this.maxKeys && window.resetAt > now) break;
      this.windows.delete(key);
      this.holding.delete(key);
    }
  }
}
