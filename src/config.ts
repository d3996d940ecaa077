// The service's settings: read from the environment once, at start-up, and validated here.
// Nothing else in the code reads process.env; everything else receives a `Config`.
import { existsSync, readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import proxyAddr from '@fastify/proxy-addr';
import { z } from 'zod';
import { postgresTarget, providerOf } from './db/providers.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** API keys shorter than this are refused: a key is a bearer secret, not a password to remember. */
const MIN_API_KEY_LENGTH = 16;

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
      })
      .superRefine((url, context) => {
        const problem = poolerParameterProblem(url);
        if (problem) context.addIssue({ code: 'custom', message: problem });
      }),
    // PostgreSQL only: a connection that bypasses the pooler, for migrations (docs/operations.md).
    DATABASE_DIRECT_URL: z
      .string()
      .refine((url) => providerOf(url) === 'postgresql', { message: 'must be a PostgreSQL URL (postgresql://user@host:5432/db)' })
      .refine((url) => poolerParameterProblem(url) === null && !postgresTarget(url).transactionPooler, {
        message: 'must reach PostgreSQL directly, not through the pooler (no pgbouncer=true)',
      })
      .optional(),
    // PostgreSQL only (SQLite opens three connections per process, no pool). Sizing: docs/operations.md, "Scale-out".
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
    BODY_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .min(1_024)
      .max(10 * 1024 * 1024)
      .default(64 * 1024),
    RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(600),
    AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).default(20),
    // Above what the client package sends (50 calls a request): see docs/security.md.
    TRPC_MAX_BATCH_CALLS: z.coerce.number().int().min(1).max(10_000).default(100),
    IDEMPOTENCY_TTL_HOURS: z.coerce
      .number()
      .min(1 / 60)
      .max(24 * 30)
      .default(24),
    CORS_ORIGINS: commaSeparated(
      z.url({ protocol: /^https?$/, error: 'each origin must be an http(s) URL such as https://app.example.com' }),
    ),
    TRUST_PROXY: z
      .string()
      .default('false')
      .transform((value, context) => parseTrustProxy(value.trim(), context)),
    REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(30_000),
    HEADERS_TIMEOUT_MS: z.coerce.number().int().min(500).max(3_600_000).default(10_000),
    IDLE_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(72_000),
    SEND_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(30_000),
    // Defaults: connectionDefaults below.
    MAX_CONNECTIONS: z.coerce.number().int().min(1).max(10_000_000).optional(),
    MAX_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(1).max(10_000_000).optional(),
    // PostgreSQL: queries that may wait for a pooled connection; more get 503 at once (a burst waits, a flood does not).
    DATABASE_POOL_QUEUE_LIMIT: z.coerce.number().int().min(0).max(1_000_000).optional(),
    REDIS_URL: z.url({ protocol: /^rediss?$/, error: 'must be a Redis URL such as redis://127.0.0.1:6379' }).optional(),
    METRICS_ENABLED: z.enum(['true', 'false']).default('true'),
    METRICS_PORT: z.coerce.number().int().min(0).max(65_535).optional(),
    METRICS_HOST: z.string().min(1).optional(),
    // The clean stop behind a balancer (docs/operations.md, "Stopping behind a load balancer").
    SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).max(600_000).default(5_000),
    SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(25_000),
  })
  .refine((s) => s.DATABASE_DIRECT_URL === undefined || providerOf(s.DATABASE_URL) === 'postgresql', {
    path: ['DATABASE_DIRECT_URL'],
    message: 'is for PostgreSQL only: DATABASE_URL is a SQLite file',
  })
  .refine((s) => s.HEADERS_TIMEOUT_MS <= s.REQUEST_TIMEOUT_MS, {
    path: ['HEADERS_TIMEOUT_MS'],
    message: 'must not be longer than REQUEST_TIMEOUT_MS (the headers are part of the request)',
  })
  .refine((s) => s.SHUTDOWN_DRAIN_MS < s.SHUTDOWN_TIMEOUT_MS, {
    path: ['SHUTDOWN_DRAIN_MS'],
    message: 'must be shorter than SHUTDOWN_TIMEOUT_MS (the drain is part of the stop)',
  })
  .refine((s) => s.METRICS_PORT === undefined || s.METRICS_PORT === 0 || s.METRICS_PORT !== s.PORT, {
    path: ['METRICS_PORT'],
    message: 'must differ from PORT (leave it unset to serve /metrics on PORT)',
  });

/** What is wrong with a PostgreSQL URL's `pgbouncer` parameter (src/db/providers.ts), or null. */
function poolerParameterProblem(url: string): string | null {
  if (providerOf(url) !== 'postgresql') return null;
  try {
    postgresTarget(url);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * TRUST_PROXY: `false`, a hop count, or the proxies' addresses/CIDRs (proxy-addr's names too). `true` is
 * refused: the left-most X-Forwarded-For entry is whatever the client wrote.
 */
function parseTrustProxy(value: string, context: z.RefinementCtx): TrustProxy {
  if (value === 'false') return false;
  if (value === 'true') {
    context.addIssue({
      code: 'custom',
      message:
        'true would trust every hop, so a client could choose its own address; name the proxies (10.0.0.0/8,::1) or give their number (1)',
    });
    return z.NEVER;
  }
  const hops = /^\d+$/.test(value) ? Number(value) : undefined;
  if (hops !== undefined && hops >= 1 && hops <= 100) return hops;
  const proxies = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  try {
    proxyAddr.compile(proxies); // the parser Fastify itself uses on these values
    if (hops === undefined && proxies.length > 0) return proxies;
  } catch {
    // reported below
  }
  context.addIssue({
    code: 'custom',
    message: "must be false, a hop count (1–100), or the proxies' addresses/CIDRs, comma-separated (10.0.0.0/8,fd00::/8)",
  });
  return z.NEVER;
}

/** See parseTrustProxy. */
export type TrustProxy = false | number | string[];

/** What is assumed when the limit cannot be read (the usual soft limit). */
const ASSUMED_LIMIT = 1_024;

/** The soft RLIMIT_NOFILE, which bounds the sockets: Node has no API for it; Linux shows it in /proc/self/limits. */
function openFileLimit(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((entry) => entry.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    if (soft === 'unlimited') return 1_048_576;
    const value = Number(soft);
    return Number.isInteger(value) && value > 0 ? value : ASSUMED_LIMIT;
  } catch {
    return ASSUMED_LIMIT;
  }
}

/** Sockets listening on PORT side by side (SO_REUSEPORT, src/http/acceptors.ts). Why 64: docs/benchmarks.md. */
const LISTENING_SOCKETS = 64;

/** Descriptors kept for all but client connections and the pool: the listening sockets, and 64 for Redis, metrics, files. */
const RESERVED_DESCRIPTORS = LISTENING_SOCKETS + 64;

/** The process's memory besides its connections, and what one connection adds (docs/benchmarks.md). */
const PROCESS_MEMORY = 160 * 2 ** 20;
const CONNECTION_MEMORY = 96 * 2 ** 10;

/**
 * The connection caps' defaults: the descriptors left after the pool and RESERVED_DESCRIPTORS, and no more than
 * fit in V8's heap limit (the operator's --max-old-space-size, docs/operations.md); per address an eighth, or
 * all of it behind a proxy (the peers are the proxies).
 */
function connectionDefaults(fileLimit: number, heapLimit: number, poolSize: number, behindProxy: boolean) {
  const byDescriptors = fileLimit - poolSize - RESERVED_DESCRIPTORS;
  const byMemory = Math.floor((heapLimit - PROCESS_MEMORY) / CONNECTION_MEMORY);
  const total = Math.max(16, Math.min(byDescriptors, byMemory));
  return { total, perAddress: behindProxy ? total : Math.max(8, Math.floor(total / 8)) };
}

/** The settings as the code reads them: named for the code, units converted, defaults applied. */
const configSchema = (fileLimit: number, heapLimit: number) =>
  settingsSchema.transform((s) => ({
    nodeEnv: s.NODE_ENV,
    host: s.HOST,
    port: s.PORT,
    /** PostgreSQL: `?pgbouncer=true` marks a URL through a transaction pooler (src/db/providers.ts). */
    databaseUrl: s.DATABASE_URL,
    /** Where migrations run: through a transaction pooler they are refused (migrateDatabase). */
    databaseMigrationUrl: s.DATABASE_DIRECT_URL ?? s.DATABASE_URL,
    /** PostgreSQL: the most connections this instance opens (each instance has its own pool). */
    databasePoolSize: s.DATABASE_POOL_SIZE,
    /** PostgreSQL: how long to wait for a connection (new or from the pool) before failing with 503. */
    databaseConnectTimeoutMs: s.DATABASE_CONNECT_TIMEOUT_MS,
    /** PostgreSQL: the longest a statement may run before it is cancelled and the request fails with 503. */
    databaseQueryTimeoutMs: s.DATABASE_QUERY_TIMEOUT_MS,
    /** Bootstrap keys from API_KEYS (the api_keys table holds the others). */
    apiKeys: s.API_KEYS,
    logLevel: s.LOG_LEVEL,
    bodyLimitBytes: s.BODY_LIMIT_BYTES,
    /** Requests per API key per minute (per instance, or shared through Redis); 0 turns the limit off. */
    rateLimitPerMinute: s.RATE_LIMIT_PER_MINUTE,
    /** Failed authentications per client address per minute before 429. */
    authFailuresPerMinute: s.AUTH_FAILURES_PER_MINUTE,
    /** The most calls one /trpc batch may name; more: one 400 for the whole request. */
    trpcMaxBatchCalls: s.TRPC_MAX_BATCH_CALLS,
    idempotencyTtlMs: Math.round(s.IDEMPOTENCY_TTL_HOURS * 3_600_000),
    /** Browser origins allowed by CORS; empty: CORS is off. */
    corsOrigins: s.CORS_ORIGINS.map((origin) => new URL(origin).origin),
    /** Whose X-Forwarded-For to believe; the client address is the right-most one no trusted proxy added. */
    trustProxy: s.TRUST_PROXY,
    /** Longest time for a whole request (headers and body) to arrive; then 408 and the connection closes. */
    requestTimeoutMs: s.REQUEST_TIMEOUT_MS,
    /** Longest time for a request's headers to arrive; then 408 and the connection closes. */
    headersTimeoutMs: s.HEADERS_TIMEOUT_MS,
    /** A connection with no traffic either way this long is closed (keep-alive connections included). */
    idleTimeoutMs: s.IDLE_TIMEOUT_MS,
    /** An answer the client takes no byte of for this long ends its connection (nginx's send_timeout). */
    sendTimeoutMs: s.SEND_TIMEOUT_MS,
    /** Redis shared by every instance for the request limits; absent: each instance counts alone. */
    redisUrl: s.REDIS_URL,
    metricsEnabled: s.METRICS_ENABLED === 'true',
    /** Serve /metrics on this port, on a listener of its own, instead of on `port`; null: on `port`. */
    metricsPort: s.METRICS_PORT ?? null,
    /** The address the /metrics listener binds when `metricsPort` is set (by default `host`). */
    metricsHost: s.METRICS_HOST ?? s.HOST,
    /** The most client connections open at once; at it, who makes room: src/http/connections.ts. */
    maxConnections: s.MAX_CONNECTIONS ?? connectionDefaults(fileLimit, heapLimit, s.DATABASE_POOL_SIZE, s.TRUST_PROXY !== false).total,
    /**
     * The listen queue, as long as MAX_CONNECTIONS (the kernel caps it at net.core.somaxconn; Node's default
     * is 511), so that a burst the caps would admit is queued, not dropped for the client to retry its SYN.
     */
    listenBacklog: s.MAX_CONNECTIONS ?? connectionDefaults(fileLimit, heapLimit, s.DATABASE_POOL_SIZE, s.TRUST_PROXY !== false).total,
    /** How many sockets listen on PORT side by side (see LISTENING_SOCKETS). */
    listenSockets: LISTENING_SOCKETS,
    /** The most connections open at once from one peer address. */
    maxConnectionsPerAddress:
      s.MAX_CONNECTIONS_PER_ADDRESS ?? connectionDefaults(fileLimit, heapLimit, s.DATABASE_POOL_SIZE, s.TRUST_PROXY !== false).perAddress,
    databasePoolQueueLimit: s.DATABASE_POOL_QUEUE_LIMIT ?? 50 * s.DATABASE_POOL_SIZE,
    /** After SIGTERM, how long /readyz answers 503 while all else is served, so balancers take the instance out first. */
    shutdownDrainMs: s.SHUTDOWN_DRAIN_MS,
    /** From SIGTERM to exit at the latest (the drain included): past it the process exits 1. */
    shutdownTimeoutMs: s.SHUTDOWN_TIMEOUT_MS,
  }));

/** package.json's version and the commit `dist/` was built from (scripts/build-if-stale.mjs; else `unknown`). */
export interface BuildInfo {
  version: string;
  commit: string;
}

/** Read once at start-up, from files beside the running code (src/ or dist/): not settings. */
function readBuildInfo(): BuildInfo {
  const read = (file: string): Record<string, unknown> => {
    try {
      return JSON.parse(readFileSync(new URL(file, import.meta.url), 'utf8')) as Record<string, unknown>;
    } catch {
      return {};
    }
  };
  const { version } = read('../package.json');
  const { commit } = read('./build-info.json');
  return {
    version: typeof version === 'string' ? version : 'unknown',
    commit: typeof commit === 'string' && commit !== '' ? commit : 'unknown',
  };
}

/** The service's settings, as parseConfig returns them, and what was built (readBuildInfo). */
export type Config = z.output<ReturnType<typeof configSchema>> & { build: BuildInfo };

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Validates `env` (empty strings count as unset); `fileLimit` and `heapLimit` (bytes) give the connection caps'
 * defaults. Throws a ConfigError naming every bad setting, so a misconfigured service stops at once.
 */
export function parseConfig(
  env: Record<string, string | undefined>,
  fileLimit: number = openFileLimit(),
  build: BuildInfo = readBuildInfo(),
  heapLimit: number = getHeapStatistics().heap_size_limit,
): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const result = configSchema(fileLimit, heapLimit).safeParse(present);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid settings:\n${problems.join('\n')}`);
  }
  return { ...result.data, build };
}

/** The settings of this process: `.env` in the working directory (if any), then the environment. */
export function loadConfig(): Config {
  if (existsSync('.env')) process.loadEnvFile('.env'); // never overrides variables already set
  return parseConfig(process.env);
}
