// Request limits shared by every instance through Redis (REDIS_URL), leased in chunks
// (leased-limiter.ts). Fail-open: while Redis does not answer, each instance counts on its own.
// @see docs/security.md "Across instances"
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Limiter } from './fixed-window-limiter.js';
import { LeasedLimiter, type Lease, type LeaseStore } from './leased-limiter.js';

const REDIS_COMMAND_TIMEOUT_MS = 2_000;
const REDIS_RETRY_AFTER_FAILURE_MS = 1_000;
const KEY_PREFIX = 'animal-store:lease:';
const LEASE_SHARE_DIVISOR = 16;

// A window is a hash: '#' every instance's units, one field per instance. A lease raises ours to
// `carry`, then grants up to `want` (at least `need`) within the limit. ARGV: instance, carry, want,
// limit, window ms, share divisor, need.
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
// ARGV: instance, keep. Never creates the key.
const RELEASE_SCRIPT = `
local mine = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '-1')
local back = mine - tonumber(ARGV[2])
if mine >= 0 and back > 0 then
  redis.call('HINCRBY', KEYS[1], ARGV[1], -back)
  redis.call('HINCRBY', KEYS[1], '#', -back)
end
return 0`;

export interface RedisHealth {
  failed(error?: unknown): void;
  noticed(error: unknown): void;
  succeeded(): void;
}

export class RedisCounters {
  private readonly client: Redis;
  private failingSince: number | null = null;
  private retryAt = 0;
  private probing = false;
  private readonly instance = randomBytes(9).toString('base64url');
  private readonly limiters: LeasedLimiter[] = [];

  constructor(
    url: string,
    private readonly health: RedisHealth,
  ) {
    this.client = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
      connectTimeout: 2_000,
      retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
      scripts: {
        leaseUnits: { numberOfKeys: 1, lua: LEASE_SCRIPT },
        releaseUnits: { numberOfKeys: 1, lua: RELEASE_SCRIPT },
      },
    });
    // Failing commands report errors; this keeps ioredis from raising unhandled 'error' events.
    this.client.on('error', () => {});
    // Redis may have restarted empty: carry the live windows back before anything else is sent.
    this.client.on('ready', () => {
      for (const limiter of this.limiters) void limiter.carryAll();
    });
  }

  /** Resolves once connected, or after `ms` (logged): the service starts either way. */
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

  /** Runs `command`, or answers undefined (fallback). After a failure one request at a time probes Redis. */
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
