// The request limits shared by every instance: each key's window budget is counted in Redis
// (REDIS_URL), so that behind N instances a key still gets its limit once, not N times. Instances
// lease the budget in chunks and spend it locally (leased-limiter.ts): Redis is asked once a lease,
// not once a request.
//
// When Redis does not answer (down, unreachable, slower than REDIS_COMMAND_TIMEOUT_MS), each
// instance falls back to its own counts: requests keep being served (fail-open), and the
// limits still hold per instance, as they do without REDIS_URL. The switch is told to `health`
// (src/observability/dependencies.ts logs it once each way: warn when Redis is lost, info when it
// is back, with the checks that fell back meanwhile). docs/security.md says why.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Limiter } from './fixed-window-limiter.js';
import { LeasedLimiter, type Lease, type LeaseStore } from './leased-limiter.js';

/** A command not answered within this counts as Redis being unreachable. */
const REDIS_COMMAND_TIMEOUT_MS = 2_000;
/** After a failure, Redis is not asked again for this long (see run()). */
const REDIS_RETRY_AFTER_FAILURE_MS = 1_000;
/** Every key this service writes starts with this (a hash per key and window: see LEASE_SCRIPT). */
const KEY_PREFIX = 'animal-store:lease:';
/** A lease grants at most this share of what is left of a window (1/16), so that few units sit unused on one instance near the end. */
const LEASE_SHARE_DIVISOR = 16;

// One key's window is a hash: '#' the units leased by every instance, and one field per instance
// with its own units. A lease first raises this instance's field to `carry` (what it knows it had
// in this window: after a restart that emptied Redis, or units counted alone while Redis was
// away), then grants up to `want` more (at least `need`, a tRPC batch's calls), never past the
// limit. The window starts (PEXPIRE) with the key. ARGV: instance, carry, want, limit, window ms,
// share divisor, need.
const LEASE_SCRIPT = `
local mine = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local taken = tonumber(redis.call('HGET', KEYS[1], '#') or '0')
local carry = tonumber(ARGV[2])
if carry > mine then
  taken = taken + carry - mine
  mine = carry
end
local grant = 0
local left = tonumber(ARGV[4]) - taken
if left > 0 and tonumber(ARGV[3]) > 0 then
  local share = math.min(tonumber(ARGV[3]), math.max(1, math.ceil(left / tonumber(ARGV[6]))))
  grant = math.min(left, math.max(tonumber(ARGV[7]), share))
end
mine = mine + grant
taken = taken + grant
if mine > 0 then redis.call('HSET', KEYS[1], ARGV[1], mine, '#', taken) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[5]) end
if ttl < 0 then ttl = tonumber(ARGV[5]) end
return {grant, taken, ttl}`;
// Gives back this instance's units beyond ARGV[2] (never creates the key). ARGV: instance, keep.
const RELEASE_SCRIPT = `
local mine = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '-1')
local back = mine - tonumber(ARGV[2])
if mine >= 0 and back > 0 then
  redis.call('HINCRBY', KEYS[1], ARGV[1], -back)
  redis.call('HINCRBY', KEYS[1], '#', -back)
end
return 0`;

/** Who is told of Redis's state: each check that fell back (with its error, when it had one), each success. */
export interface RedisHealth {
  failed(error?: unknown): void;
  /** Not connected at start: nothing was counted yet. */
  noticed(error: unknown): void;
  succeeded(): void;
}

/** One connection to Redis for all limiters of this instance, with the fallback bookkeeping. */
export class RedisCounters {
  private readonly client: Redis;
  private failingSince: number | null = null;
  private retryAt = 0;
  private probing = false;
  /** This instance's field in every window's hash. */
  private readonly instance = randomBytes(9).toString('base64url');
  private readonly limiters: LeasedLimiter[] = [];

  constructor(
    url: string,
    private readonly health: RedisHealth,
  ) {
    this.client = new Redis(url, {
      // Fail at once while disconnected instead of queueing requests behind a dead server.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
      connectTimeout: 2_000,
      // Reconnect for ever, at most every 2 s.
      retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
      scripts: {
        leaseUnits: { numberOfKeys: 1, lua: LEASE_SCRIPT },
        releaseUnits: { numberOfKeys: 1, lua: RELEASE_SCRIPT },
      },
    });
    // Connection errors are reported by the commands that fail; this only keeps ioredis from
    // printing each reconnection attempt as an unhandled 'error' event.
    this.client.on('error', () => {});
    // On every (re)connection (Redis may have restarted empty, or the instance counted alone
    // until now), each limiter writes its units of the live windows into it, before anything else
    // is sent, so that a restart does not hand every key its budget again.
    this.client.on('ready', () => {
      for (const limiter of this.limiters) void limiter.carryAll();
    });
  }

  /**
   * Resolves once Redis is connected, or once it has not connected within `ms` (logged): the
   * service starts either way, with the fallback counts until Redis answers.
   */
  async connected(ms = 2_000): Promise<void> {
    if (this.client.status === 'ready') return;
    const ready = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.client.once('ready', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (!(await ready)) {
      this.failingSince = Date.now();
      this.health.noticed(new Error(`not connected within ${ms} ms`));
    }
  }

  /**
   * Runs `command` on Redis, or answers undefined (use the fallback) when Redis cannot. After a
   * failure, Redis is left alone for a second, then one request at a time tries it again while
   * the others use the fallback, so a hung Redis costs one request a timeout, not every request.
   */
  async run<T>(command: (client: Redis) => Promise<T>): Promise<T | undefined> {
    const probe = this.failingSince !== null;
    if (probe) {
      if (this.probing || Date.now() < this.retryAt) {
        this.health.failed();
        return undefined;
      }
      this.probing = true;
    }
    try {
      const result = await command(this.client);
      if (this.failingSince !== null) {
        this.failingSince = null;
        this.health.succeeded();
      }
      return result;
    } catch (error) {
      this.retryAt = Date.now() + REDIS_RETRY_AFTER_FAILURE_MS;
      if (this.failingSince === null) this.failingSince = Date.now();
      this.health.failed(error);
      return undefined;
    } finally {
      if (probe) this.probing = false;
    }
  }

  limiter(policy: string, limit: number, windowMs = 60_000): Limiter {
    const limiter = new LeasedLimiter(this.store(`${KEY_PREFIX}${policy}:`), limit, windowMs);
    this.limiters.push(limiter);
    return limiter;
  }

  async close(): Promise<void> {
    await Promise.all(this.limiters.map((limiter) => limiter.close()));
    await this.client.quit().catch(() => this.client.disconnect());
  }

  /** The leases of one limit, in Redis. Leases go through run() (the fallback bookkeeping); the rest is best effort. */
  private store(prefix: string): LeaseStore {
    const client = this.client as ScriptClient;
    const lease = (key: string, carry: number, want: number, need: number, limit: number, windowMs: number) =>
      client.leaseUnits(prefix + key, this.instance, carry, want, limit, Math.ceil(windowMs), LEASE_SHARE_DIVISOR, need);
    const asLease = (answer: [number, number, number] | undefined): Lease | undefined =>
      answer && { granted: answer[0], taken: answer[1], ttlMs: answer[2] };
    return {
      lease: async (key, carry, want, need, limit, windowMs) =>
        asLease(await this.run(() => lease(key, carry, want, need, limit, windowMs))),
      carry: (key, units, windowMs) => lease(key, units, 0, 0, 0, windowMs).then(asLease, () => undefined),
      release: (key, keep) =>
        client.releaseUnits(prefix + key, this.instance, keep).then(
          () => {},
          () => {},
        ),
    };
  }
}

type ScriptClient = Redis & {
  leaseUnits(
    key: string,
    instance: string,
    carry: number,
    want: number,
    limit: number,
    windowMs: number,
    divisor: number,
    need: number,
  ): Promise<[number, number, number]>;
  releaseUnits(key: string, instance: string, keep: number): Promise<number>;
};
