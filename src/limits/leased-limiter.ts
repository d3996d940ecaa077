// The shared limits' local half: a key's window budget lives in a store every instance shares
// (Redis: redis-limiter.ts), and each instance leases units of it in chunks and spends them here,
// so most requests are counted without a round trip (take() answers synchronously while units are
// in hand). The store never grants more than the limit in a window, so across any number of
// instances a key gets at most its limit; what a lease costs instead is units held by an instance
// the key's traffic has left: given back after RELEASE_AFTER_MS unused. While the store does not
// answer, each instance counts on its own: its own requests in the window, before the outage
// included. After the store comes back empty (a restart), each instance writes its units of every
// live window back into it (carryAll()). docs/security.md, "Across instances", states the bounds.
import type { LimitDecision, Limiter } from './fixed-window-limiter.js';

/** Units granted by one lease at most; the store also grants at most 1/16 of what is left (redis-limiter.ts). */
const LEASE_UNITS = 100;
/** Units unused this long are given back, so that other instances can have them. */
const RELEASE_AFTER_MS = 1_000;
/** After the store said the budget is spent, this instance refuses on its own for this long, then asks again. */
const ASK_AGAIN_AFTER_MS = 1_000;
/** A window's count of every instance's units older than this is refreshed in the background (for `remaining`). */
const REFRESH_AFTER_MS = 1_000;
/** By default at most this many keys are tracked; past it the oldest windows are forgotten. */
const MAX_TRACKED_KEYS = 100_000;

export interface Lease {
  /** Units granted to this instance now (0: the window's budget is spent). */
  granted: number;
  /** Units of the window taken by every instance, these included. */
  taken: number;
  /** Milliseconds until the window ends. */
  ttlMs: number;
}

/** Where the windows' budgets live. Each call answers undefined when the store does not answer. */
export interface LeaseStore {
  /**
   * Records that this instance holds at least `carry` units of the window, then grants up to `want`
   * more (at least `need` while that many are left; want 0: none).
   */
  lease(key: string, carry: number, want: number, need: number, limit: number, windowMs: number): Promise<Lease | undefined>;
  /** Gives back what this instance holds of the window beyond `keep` units. */
  release(key: string, keep: number): Promise<void>;
  /** lease() granting nothing, sent even while the store counts as not answering (on reconnection). */
  carry(key: string, units: number, windowMs: number): Promise<Lease | undefined>;
}

interface Window {
  resetAt: number;
  /** Requests this instance let through in the window. */
  served: number;
  /** Units this instance leased in the window; `held - served` are in hand. */
  held: number;
  /** Units taken by every instance, as of this instance's last lease (or refresh), asked at `takenAt`. */
  taken: number;
  takenAt: number;
  /** The store had nothing left to lease: refused here (beyond the units in hand) without asking until then. */
  refusedUntil: number;
  /** The store did not answer the last lease: this instance counts on its own. */
  alone: boolean;
  lastUsed: number;
  /** The lease under way for this window (one at a time; concurrent requests wait for it). */
  pending: Promise<void> | null;
}

export class LeasedLimiter implements Limiter {
  /** In the order the windows started (a Map keeps insertion order): the first is the oldest. */
  private readonly windows = new Map<string, Window>();
  /** Windows with units in hand, for the release sweep. */
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

  /** Counts `count` requests (a tRPC batch's calls together): all of them, or none and refused. */
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

  /** Writes this instance's units of every live window into the store (on every connection: it may have come back empty). */
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

  /** Stops the sweep and gives back every unit in hand (an instance stopping leaves none unused). */
  async close(): Promise<void> {
    clearInterval(this.sweep);
    const now = this.now();
    const unused = [...this.holding].filter(([, window]) => window.resetAt > now && window.served < window.held);
    await Promise.all(unused.map(([key, window]) => this.giveBackUnused(key, window)));
    this.holding.clear();
  }

  private async takeAfterLease(key: string, count: number): Promise<LimitDecision> {
    // Each round ends in units in hand, a refusal, or the store not answering: requests waiting
    // together for one lease go round again when the ones before them spent it.
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
      // From the time the lease was asked for: this window never ends after the store's.
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

  /** Asks for the count of every instance's units again (a lease of nothing), without waiting for it. */
  private refresh(key: string, window: Window, now: number): void {
    window.takenAt = now;
    void this.store.lease(key, Math.max(window.held, window.served), 0, 0, this.limit, Math.max(1, window.resetAt - now)).then((lease) => {
      if (lease) window.taken = lease.taken;
    });
  }

  private refused(window: Window, now: number): LimitDecision {
    return this.answer(false, 0, window.resetAt - now);
  }

  /** The store did not answer: this instance's own count of the window decides. */
  private countAlone(window: Window, now: number, count: number): LimitDecision {
    if (window.served + count > this.limit) return this.refused(window, now);
    window.served += count;
    return this.answer(true, this.limit - window.served, window.resetAt - now);
  }

  /**
   * What is left of the key's budget as this instance knows it: what no instance had leased at its
   * last lease, and the units in its hand. Exact while one instance serves the key; with more, less
   * than the truth by the units the others hold unspent, more by what they took since that lease.
   */
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

  /** Units unused for RELEASE_AFTER_MS go back to the store (best effort: if it does not answer, they lapse with the window). */
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
