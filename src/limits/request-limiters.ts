// The service's two request limits, built once from the settings: requests per API key (both
// surfaces, one budget) and wrong keys per client address. In memory per instance, or shared by
// every instance through Redis when REDIS_URL is set (redis-limiter.ts: budgets leased in chunks,
// spent locally). Each is decided in one place: the wrong-key limit in src/http/authentication.ts,
// which marks the request; the per-key limit in src/api/trpc.ts (protectedProcedure), once per
// request: a tRPC batch's calls share the decision taken for the whole batch before its body is
// read (src/http/trpc-plugin.ts).
import type { Config } from '../config.js';
import { FixedWindowLimiter, type Limiter } from './fixed-window-limiter.js';
import type { RedisHealth } from './redis-limiter.js';

export interface RequestLimits {
  /** Requests per API key id; null when RATE_LIMIT_PER_MINUTE is 0. */
  perKey: Limiter | null;
  /** Wrong keys per client address (see client-address.ts for what "address" means). */
  authFailures: Limiter;
  /** Resolves once the shared store is connected (or has not connected in time: see redis-limiter.ts). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export type RequestLimitSettings = Pick<Config, 'rateLimitPerMinute' | 'authFailuresPerMinute' | 'redisUrl'>;

/**
 * The limits the settings ask for; with REDIS_URL, `redisHealth` is told when Redis stops and starts
 * answering (src/observability/dependencies.ts).
 */
export async function createRequestLimits(settings: RequestLimitSettings, redisHealth?: RedisHealth): Promise<RequestLimits> {
  if (!settings.redisUrl) {
    return {
      perKey: settings.rateLimitPerMinute > 0 ? new FixedWindowLimiter(settings.rateLimitPerMinute) : null,
      authFailures: new FixedWindowLimiter(settings.authFailuresPerMinute),
      ready: async () => {},
      close: async () => {},
    };
  }
  // Loaded only when used: a service without REDIS_URL never loads the Redis client.
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

/**
 * One short line for a Redis fault, in the operator's words rather than the client library's
 * (ioredis says "Stream isn't writeable and enableOfflineQueue options is false" for "not connected").
 */
export function describeRedisFault(error: unknown): string {
  const { message = String(error), code } = (error ?? {}) as { message?: string; code?: unknown };
  if (message.startsWith("Stream isn't writeable")) return 'not connected (reconnecting)';
  if (message === 'Command timed out') return 'no answer in time (the command timed out)';
  if (code === 'ECONNREFUSED') return `connection refused (${message})`;
  return message.split('\n')[0]!.slice(0, 200);
}
