// The request limits shared by every instance: the same fixed windows as the in-memory limiter
// (fixed-window-limiter.ts), counted in Redis (REDIS_URL), so that behind N instances a key still
// gets its limit once, not N times.
//
// When Redis does not answer (down, unreachable, slower than REDIS_COMMAND_TIMEOUT_MS), each
// instance falls back to its own in-memory counts: requests keep being served (fail-open), and the
// limits still hold per instance, as they do without REDIS_URL. The switch is told to `health`
// (src/observability/dependencies.ts logs it once each way: warn when Redis is lost, info when it
// is back, with the checks that fell back meanwhile). docs/security.md says why.
import { Redis } from 'ioredis';
import { decision, FixedWindowLimiter, type LimitDecision, type Limiter } from './fixed-window-limiter.js';

/** A command not answered within this counts as Redis being unreachable. */
const REDIS_COMMAND_TIMEOUT_MS = 2_000;
/** After a failure, Redis is not asked again for this long (see run()). */
const REDIS_RETRY_AFTER_FAILURE_MS = 1_000;
/** Every key this service writes starts with this. */
const KEY_PREFIX = 'animal-store:limit:';

// INCRBY, and start the window (PEXPIRE) when this is its first request: one atomic step.
const TAKE_SCRIPT = `
local count = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;
const PEEK_SCRIPT = `
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
return {count, redis.call('PTTL', KEYS[1])}`;
const GIVE_BACK_SCRIPT = `
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count > 0 then return redis.call('DECR', KEYS[1]) end
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
        takeOne: { numberOfKeys: 1, lua: TAKE_SCRIPT },
        peekAt: { numberOfKeys: 1, lua: PEEK_SCRIPT },
        giveOneBack: { numberOfKeys: 1, lua: GIVE_BACK_SCRIPT },
      },
    });
    // Connection errors are reported by the commands that fail; this only keeps ioredis from
    // printing each reconnection attempt as an unhandled 'error' event.
    this.client.on('error', () => {});
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
    return new RedisLimiter(this, `${KEY_PREFIX}${policy}:`, limit, windowMs, new FixedWindowLimiter(limit, windowMs));
  }

  async close(): Promise<void> {
    await this.client.quit().catch(() => this.client.disconnect());
  }
}

type ScriptClient = Redis & {
  takeOne(key: string, windowMs: number, count: number): Promise<[number, number]>;
  peekAt(key: string): Promise<[number, number]>;
  giveOneBack(key: string): Promise<number>;
};

class RedisLimiter implements Limiter {
  constructor(
    private readonly redis: RedisCounters,
    private readonly prefix: string,
    readonly limit: number,
    readonly windowMs: number,
    private readonly fallback: FixedWindowLimiter,
  ) {}

  async take(key: string, count = 1): Promise<LimitDecision> {
    const counted = await this.redis.run((client) => (client as ScriptClient).takeOne(this.prefix + key, this.windowMs, count));
    if (!counted) return this.fallback.take(key, count);
    return decision(this.limit, counted[0], counted[1]);
  }

  async peek(key: string): Promise<LimitDecision> {
    const counted = await this.redis.run((client) => (client as ScriptClient).peekAt(this.prefix + key));
    if (!counted) return this.fallback.peek(key);
    const [count, ttl] = counted;
    const next = decision(this.limit, count + 1, ttl > 0 ? ttl : this.windowMs);
    return { ...next, remaining: Math.max(0, this.limit - count) };
  }

  async giveBack(key: string): Promise<void> {
    const done = await this.redis.run((client) => (client as ScriptClient).giveOneBack(this.prefix + key));
    if (done === undefined) this.fallback.giveBack(key);
  }
}
