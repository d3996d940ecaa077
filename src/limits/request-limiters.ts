// The two request limits, built once from the settings: per API key (both surfaces, one budget)
// and wrong keys per client address; in memory, or shared through Redis with REDIS_URL.
import type { Config } from '../config.js';
import { FixedWindowLimiter, type Limiter } from './fixed-window-limiter.js';
import type { RedisHealth } from './redis-limiter.js';

export interface RequestLimits {
  /** Null when RATE_LIMIT_PER_MINUTE is 0. */
  perKey: Limiter | null;
  authFailures: Limiter;
  ready(): Promise<void>;
  close(): Promise<void>;
}

export type RequestLimitSettings = Pick<Config, 'rateLimitPerMinute' | 'authFailuresPerMinute' | 'redisUrl'>;

export async function createRequestLimits(settings: RequestLimitSettings, redisHealth?: RedisHealth): Promise<RequestLimits> {
  if (!settings.redisUrl) {
    return {
      perKey: settings.rateLimitPerMinute > 0 ? new FixedWindowLimiter(settings.rateLimitPerMinute) : null,
      authFailures: new FixedWindowLimiter(settings.authFailuresPerMinute),
      ready: async () => {},
      close: async () => {},
    };
  }
  // A service without REDIS_URL never loads the Redis client.
  const { RedisCounters } = await import('./redis-limiter.js');
  if (!redisHealth) throw new Error('REDIS_URL is set: createRequestLimits needs whom to tell of Redis faults');
  const redis = new RedisCounters(settings.redisUrl, redisHealth);
  return {
    perKey: settings.rateLimitPerMinute > 0 ? redis.limiter('per-key', settings.rateLimitPerMinute) : null,
    authFailures: redis.limiter('auth-failures', settings.authFailuresPerMinute),
    ready: () => redis.connected(),
    close: () => redis.close(),
  };
}

/** A Redis fault in the operator's words, not ioredis's. */
export function describeRedisFault(error: unknown): string {
  const { message = String(error), code } = (error ?? {}) as { message?: string; code?: unknown };
  if (message.startsWith("Stream isn't writeable")) return 'not connected (reconnecting)';
  if (message === 'Command timed out') return 'no answer in time (the command timed out)';
  if (code === 'ECONNREFUSED') return `connection refused (${message})`;
  return message.split('\n')[0]!.slice(0, 200);
}
