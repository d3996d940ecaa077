// The service's settings: read from the environment once, at start-up, and validated here.
// Nothing else in the code reads process.env; everything else receives a `Config`.
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { providerOf } from './db/providers.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** API keys shorter than this are refused: a key is a bearer secret, not a password to remember. */
export const MIN_API_KEY_LENGTH = 16;

/** A comma-separated list (blanks around items and empty items ignored), each item checked by `item`. */
function commaSeparated<T extends z.ZodType<unknown, string>>(item: T) {
  return z
    .string()
    .default('')
    .transform((list) =>
      list
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== ''),
    )
    .pipe(z.array(item));
}

const settingsSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
    HOST: z.string().min(1).default('127.0.0.1'),
    PORT: z.coerce.number().int().min(0).max(65_535).default(3000),
    DATABASE_URL: z
      .string()
      .default('file:./data/animal-store.db')
      .refine((url) => providerOf(url) !== undefined, {
        message: 'must be a SQLite URL (file:./path.db) or a PostgreSQL URL (postgresql://user@host:5432/db)',
      }),
    // PostgreSQL only (SQLite has one connection per process). See the README on sizing the pool.
    DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(1_000).default(10),
    DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
    DATABASE_QUERY_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
    API_KEYS: commaSeparated(
      z
        .string()
        .min(MIN_API_KEY_LENGTH, `each key must be at least ${MIN_API_KEY_LENGTH} characters`)
        .regex(/^[\w.~+/-]+=*$/, 'each key must be a bearer token (letters, digits, -._~+/ and trailing =)'),
    ),
    LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
    BODY_LIMIT_BYTES: z.coerce.number().int().min(1_024).max(10 * 1024 * 1024).default(64 * 1024),
    RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(600),
    AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).default(20),
    IDEMPOTENCY_TTL_HOURS: z.coerce.number().min(1 / 60).max(24 * 30).default(24),
    CORS_ORIGINS: commaSeparated(
      z.url({ protocol: /^https?$/, error: 'each origin must be an http(s) URL such as https://app.example.com' }),
    ),
    TRUST_PROXY: z.enum(['true', 'false']).default('false'),
    METRICS_ENABLED: z.enum(['true', 'false']).default('true'),
    METRICS_PORT: z.coerce.number().int().min(0).max(65_535).optional(),
    METRICS_HOST: z.string().min(1).optional(),
  })
  .refine((s) => s.METRICS_PORT === undefined || s.METRICS_PORT === 0 || s.METRICS_PORT !== s.PORT, {
    path: ['METRICS_PORT'],
    message: 'must differ from PORT (leave it unset to serve /metrics on PORT)',
  });

export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  host: string;
  port: number;
  databaseUrl: string;
  /** PostgreSQL: the most connections this instance opens (each instance has its own pool). */
  databasePoolSize: number;
  /** PostgreSQL: how long to wait for a connection (new or from the pool) before failing with 503. */
  databaseConnectTimeoutMs: number;
  /** PostgreSQL: the longest a statement may run before it is cancelled and the request fails with 503. */
  databaseQueryTimeoutMs: number;
  /** Bootstrap keys from API_KEYS (the api_keys table holds the others). */
  apiKeys: string[];
  logLevel: (typeof LOG_LEVELS)[number];
  bodyLimitBytes: number;
  /** Requests per API key per minute, per instance; 0 turns the limit off. */
  rateLimitPerMinute: number;
  /** Failed authentications per client address per minute before 429. */
  authFailuresPerMinute: number;
  idempotencyTtlMs: number;
  /** Browser origins allowed by CORS; empty: CORS is off. */
  corsOrigins: string[];
  /** Take the client address from X-Forwarded-For (behind a load balancer). */
  trustProxy: boolean;
  /** Serve GET /metrics (Prometheus) and count requests for it. */
  metricsEnabled: boolean;
  /** Serve /metrics on this port, on a listener of its own, instead of on `port`; null: on `port`. */
  metricsPort: number | null;
  /** The address the /metrics listener binds when `metricsPort` is set (by default `host`). */
  metricsHost: string;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Validates the settings in `env` (empty strings count as unset). Throws a ConfigError that names
 * every bad setting, so a misconfigured service stops at once with a readable message.
 */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const result = settingsSchema.safeParse(present);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid settings:\n${problems.join('\n')}`);
  }
  const s = result.data;
  return {
    nodeEnv: s.NODE_ENV,
    host: s.HOST,
    port: s.PORT,
    databaseUrl: s.DATABASE_URL,
    databasePoolSize: s.DATABASE_POOL_SIZE,
    databaseConnectTimeoutMs: s.DATABASE_CONNECT_TIMEOUT_MS,
    databaseQueryTimeoutMs: s.DATABASE_QUERY_TIMEOUT_MS,
    apiKeys: s.API_KEYS,
    logLevel: s.LOG_LEVEL,
    bodyLimitBytes: s.BODY_LIMIT_BYTES,
    rateLimitPerMinute: s.RATE_LIMIT_PER_MINUTE,
    authFailuresPerMinute: s.AUTH_FAILURES_PER_MINUTE,
    idempotencyTtlMs: Math.round(s.IDEMPOTENCY_TTL_HOURS * 3_600_000),
    corsOrigins: s.CORS_ORIGINS.map((origin) => new URL(origin).origin),
    trustProxy: s.TRUST_PROXY === 'true',
    metricsEnabled: s.METRICS_ENABLED === 'true',
    metricsPort: s.METRICS_PORT ?? null,
    metricsHost: s.METRICS_HOST ?? s.HOST,
  };
}

/** The settings of this process: `.env` in the working directory (if any), then the environment. */
export function loadConfig(): Config {
  if (existsSync('.env')) process.loadEnvFile('.env'); // never overrides variables already set
  return parseConfig(process.env);
}
