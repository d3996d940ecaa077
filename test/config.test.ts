// The settings: validated once, with defaults, and refused with a message that names each problem.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../src/config.js';
import { postgresTarget } from '../src/db/providers.js';

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

describe('parseConfig', () => {
  it('has working defaults for local use', () => {
    expect(parseConfig({}, 20_000, undefined, 4_288 * 2 ** 20)).toEqual({
      nodeEnv: 'development',
      host: '127.0.0.1',
      port: 3000,
      databaseUrl: 'file:./data/animal-store.db',
      databaseMigrationUrl: 'file:./data/animal-store.db',
      databasePoolSize: 10,
      databaseConnectTimeoutMs: 5_000,
      databaseQueryTimeoutMs: 10_000,
      apiKeys: [],
      logLevel: 'info',
      bodyLimitBytes: 65_536,
      rateLimitPerMinute: 600,
      authFailuresPerMinute: 20,
      trpcMaxBatchCalls: 100,
      idempotencyTtlMs: 86_400_000,
      corsOrigins: [],
      trustProxy: false,
      requestTimeoutMs: 30_000,
      sendTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      idleTimeoutMs: 72_000,
      redisUrl: undefined,
      metricsEnabled: true,
      metricsPort: null,
      metricsHost: '127.0.0.1',
      maxConnections: 19_862,
      listenBacklog: 19_862,
      listenSockets: 64,
      maxConnectionsPerAddress: 2_482,
      databasePoolQueueLimit: 500,
      shutdownDrainMs: 5_000,
      shutdownTimeoutMs: 25_000,
      // From the sources, not a build: package.json's version, no recorded commit (dist/build-info.json).
      build: { version: PACKAGE_VERSION, commit: 'unknown' },
    });
  });

  it('reads every setting', () => {
    const config = parseConfig({
      NODE_ENV: 'production',
      HOST: '0.0.0.0',
      PORT: '8080',
      DATABASE_URL: 'postgresql://pets@pgbouncer.internal:6432/pets?pgbouncer=true',
      DATABASE_DIRECT_URL: 'postgresql://pets@db.internal:5432/pets',
      DATABASE_POOL_SIZE: '25',
      DATABASE_CONNECT_TIMEOUT_MS: '2000',
      DATABASE_QUERY_TIMEOUT_MS: '3000',
      API_KEYS: ' key-aaaaaaaaaaaaaaaa , key-bbbbbbbbbbbbbbbb,',
      LOG_LEVEL: 'warn',
      BODY_LIMIT_BYTES: '2048',
      RATE_LIMIT_PER_MINUTE: '0',
      AUTH_FAILURES_PER_MINUTE: '5',
      TRPC_MAX_BATCH_CALLS: '50',
      IDEMPOTENCY_TTL_HOURS: '0.5',
      CORS_ORIGINS: 'https://app.example.com, http://localhost:5173/',
      TRUST_PROXY: '10.0.0.0/8, 192.168.1.10,fd00::/8',
      REQUEST_TIMEOUT_MS: '20000',
      SEND_TIMEOUT_MS: '15000',
      HEADERS_TIMEOUT_MS: '5000',
      IDLE_TIMEOUT_MS: '65000',
      REDIS_URL: 'redis://cache.internal:6379/2',
      METRICS_ENABLED: 'false',
      METRICS_PORT: '9464',
      METRICS_HOST: '10.0.0.5',
      MAX_CONNECTIONS: '5000',
      MAX_CONNECTIONS_PER_ADDRESS: '50',
      DATABASE_POOL_QUEUE_LIMIT: '40',
      SHUTDOWN_DRAIN_MS: '2000',
      SHUTDOWN_TIMEOUT_MS: '20000',
    });
    expect(config).toEqual({
      nodeEnv: 'production',
      host: '0.0.0.0',
      port: 8080,
      databaseUrl: 'postgresql://pets@pgbouncer.internal:6432/pets?pgbouncer=true',
      databaseMigrationUrl: 'postgresql://pets@db.internal:5432/pets',
      databasePoolSize: 25,
      databaseConnectTimeoutMs: 2_000,
      databaseQueryTimeoutMs: 3_000,
      apiKeys: ['key-aaaaaaaaaaaaaaaa', 'key-bbbbbbbbbbbbbbbb'],
      logLevel: 'warn',
      bodyLimitBytes: 2048,
      rateLimitPerMinute: 0,
      authFailuresPerMinute: 5,
      trpcMaxBatchCalls: 50,
      idempotencyTtlMs: 1_800_000,
      corsOrigins: ['https://app.example.com', 'http://localhost:5173'],
      trustProxy: ['10.0.0.0/8', '192.168.1.10', 'fd00::/8'],
      requestTimeoutMs: 20_000,
      sendTimeoutMs: 15_000,
      headersTimeoutMs: 5_000,
      idleTimeoutMs: 65_000,
      redisUrl: 'redis://cache.internal:6379/2',
      metricsEnabled: false,
      metricsPort: 9464,
      metricsHost: '10.0.0.5',
      maxConnections: 5_000,
      listenBacklog: 5_000,
      listenSockets: 64,
      maxConnectionsPerAddress: 50,
      databasePoolQueueLimit: 40,
      shutdownDrainMs: 2_000,
      shutdownTimeoutMs: 20_000,
      build: { version: PACKAGE_VERSION, commit: 'unknown' },
    });
  });

  it('derives the connection caps from the open-file limit, leaving room for the pool, the listening sockets and the rest', () => {
    const heap = 4_288 * 2 ** 20; // V8's default limit on this machine: the descriptors decide
    expect(parseConfig({}, 1_024, undefined, heap)).toMatchObject({
      maxConnections: 886,
      listenBacklog: 886,
      maxConnectionsPerAddress: 110,
    });
    expect(parseConfig({ DATABASE_POOL_SIZE: '50' }, 1_024, undefined, heap)).toMatchObject({
      maxConnections: 846,
      databasePoolQueueLimit: 2_500,
    });
    // Behind a proxy the peers are the proxies: no per-address share.
    expect(parseConfig({ TRUST_PROXY: '1' }, 1_024, undefined, heap)).toMatchObject({ maxConnections: 886, maxConnectionsPerAddress: 886 });
    expect(parseConfig({}, 64, undefined, heap)).toMatchObject({ maxConnections: 16, maxConnectionsPerAddress: 8 });
  });

  it('derives them from the heap limit too: no more connections than fit in the memory NODE_OPTIONS gives', () => {
    // --max-old-space-size=256 --max-semi-space-size=8 (docs/operations.md): a 280 MiB heap limit,
    // 120 MiB of it past what the process needs besides, 96 KiB a connection.
    expect(parseConfig({}, 20_000, undefined, 280 * 2 ** 20)).toMatchObject({
      maxConnections: 1_280,
      listenBacklog: 1_280,
      maxConnectionsPerAddress: 160,
    });
    expect(parseConfig({}, 20_000, undefined, 536 * 2 ** 20)).toMatchObject({ maxConnections: 4_010 });
    // Set explicitly, MAX_CONNECTIONS wins, and the listen queue follows it.
    expect(parseConfig({ MAX_CONNECTIONS: '2500' }, 20_000, undefined, 280 * 2 ** 20)).toMatchObject({
      maxConnections: 2_500,
      listenBacklog: 2_500,
    });
  });

  it.each([
    ['file:/var/lib/pets.db', 'sqlite'],
    ['file:./data/pets.db', 'sqlite'],
    ['postgresql://pets@db.internal:5432/pets', 'postgresql'],
    ['postgres://pets:secret@127.0.0.1/pets?sslmode=require', 'postgresql'],
    ['postgresql://pets@pgbouncer.internal:6432/pets?sslmode=require&pgbouncer=true', 'postgresql through a transaction pooler'],
    ['postgresql://pets@db.internal:5432/pets?pgbouncer=false', 'postgresql'],
  ])('accepts DATABASE_URL %s (%s), and migrates there unless DATABASE_DIRECT_URL says otherwise', (url) => {
    expect(parseConfig({ DATABASE_URL: url })).toMatchObject({ databaseUrl: url, databaseMigrationUrl: url });
  });

  it('pgbouncer=true marks a pooled URL, and the driver gets the URL without it (src/db/providers.ts)', () => {
    expect(postgresTarget('postgresql://pets@pooler:6432/pets?sslmode=require&pgbouncer=true')).toEqual({
      connectionString: 'postgresql://pets@pooler:6432/pets?sslmode=require',
      transactionPooler: true,
    });
    expect(postgresTarget('postgresql://pets@db:5432/pets?pgbouncer=false')).toEqual({
      connectionString: 'postgresql://pets@db:5432/pets',
      transactionPooler: false,
    });
    const plain = 'postgres://pets:s%40cret@db/pets';
    expect(postgresTarget(plain)).toEqual({ connectionString: plain, transactionPooler: false });
  });

  it.each([
    ['false', false],
    ['2', 2],
    ['loopback', ['loopback']],
    ['127.0.0.1,::1', ['127.0.0.1', '::1']],
  ])('accepts TRUST_PROXY=%s', (value, expected) => {
    expect(parseConfig({ TRUST_PROXY: value }).trustProxy).toEqual(expected);
  });

  it("serves /metrics on the metrics port at the service's address unless METRICS_HOST says otherwise", () => {
    expect(parseConfig({ HOST: '0.0.0.0', METRICS_PORT: '9464' })).toMatchObject({ metricsHost: '0.0.0.0', metricsPort: 9464 });
  });

  it('treats empty values as unset', () => {
    expect(parseConfig({ PORT: '', DATABASE_URL: '' }).port).toBe(3000);
  });

  it.each([
    [{ PORT: 'eighty' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ DATABASE_URL: 'mysql://localhost/pets' }, /DATABASE_URL/],
    [{ DATABASE_URL: 'postgresql:pets' }, /DATABASE_URL/],
    [{ DATABASE_URL: 'postgresql://pets@pooler:6432/pets?pgbouncer=yes' }, /DATABASE_URL: pgbouncer=yes: must be true .* or false/],
    [{ DATABASE_DIRECT_URL: 'postgresql://pets@db:5432/pets' }, /DATABASE_DIRECT_URL: is for PostgreSQL only/],
    [
      { DATABASE_URL: 'postgresql://pets@pooler/pets?pgbouncer=true', DATABASE_DIRECT_URL: 'file:./x.db' },
      /DATABASE_DIRECT_URL: must be a PostgreSQL URL/,
    ],
    [
      { DATABASE_URL: 'postgresql://pets@pooler/pets?pgbouncer=true', DATABASE_DIRECT_URL: 'postgresql://pets@pooler/pets?pgbouncer=true' },
      /DATABASE_DIRECT_URL: must reach PostgreSQL directly/,
    ],
    [{ DATABASE_POOL_SIZE: '0' }, /DATABASE_POOL_SIZE/],
    [{ DATABASE_POOL_SIZE: 'many' }, /DATABASE_POOL_SIZE/],
    [{ DATABASE_CONNECT_TIMEOUT_MS: '5' }, /DATABASE_CONNECT_TIMEOUT_MS/],
    [{ DATABASE_QUERY_TIMEOUT_MS: '-1' }, /DATABASE_QUERY_TIMEOUT_MS/],
    [{ API_KEYS: 'short' }, /API_KEYS.*at least 16/],
    [{ API_KEYS: 'has spaces in the middle of it' }, /API_KEYS/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    [{ NODE_ENV: 'staging' }, /NODE_ENV/],
    [{ RATE_LIMIT_PER_MINUTE: '-1' }, /RATE_LIMIT_PER_MINUTE/],
    [{ CORS_ORIGINS: '*' }, /CORS_ORIGINS/],
    [{ TRUST_PROXY: 'yes' }, /TRUST_PROXY/],
    [{ TRUST_PROXY: 'true' }, /TRUST_PROXY: true would trust every hop/],
    [{ TRUST_PROXY: '10.0.0.0/33' }, /TRUST_PROXY/],
    [{ TRUST_PROXY: '0' }, /TRUST_PROXY/],
    [{ REQUEST_TIMEOUT_MS: '10' }, /REQUEST_TIMEOUT_MS/],
    [{ REQUEST_TIMEOUT_MS: '5000', HEADERS_TIMEOUT_MS: '6000' }, /HEADERS_TIMEOUT_MS: must not be longer than REQUEST_TIMEOUT_MS/],
    [{ IDLE_TIMEOUT_MS: '0' }, /IDLE_TIMEOUT_MS/],
    [{ SEND_TIMEOUT_MS: '999' }, /SEND_TIMEOUT_MS/],
    [{ SHUTDOWN_DRAIN_MS: '30000', SHUTDOWN_TIMEOUT_MS: '30000' }, /SHUTDOWN_DRAIN_MS: must be shorter than SHUTDOWN_TIMEOUT_MS/],
    [{ SHUTDOWN_TIMEOUT_MS: '500' }, /SHUTDOWN_TIMEOUT_MS/],
    [{ REDIS_URL: 'http://cache:6379' }, /REDIS_URL/],
    [{ METRICS_ENABLED: 'on' }, /METRICS_ENABLED/],
    [{ METRICS_PORT: '65536' }, /METRICS_PORT/],
    [{ METRICS_PORT: '3000' }, /METRICS_PORT.*differ from PORT/],
    [{ PORT: '8080', METRICS_PORT: '8080' }, /METRICS_PORT.*differ from PORT/],
  ])('refuses %o', (env, message) => {
    expect(() => parseConfig(env)).toThrow(ConfigError);
    expect(() => parseConfig(env)).toThrow(message);
  });

  it('names every bad setting at once', () => {
    expect(() => parseConfig({ PORT: 'x', LOG_LEVEL: 'y' })).toThrow(/PORT[\s\S]*LOG_LEVEL/);
  });
});
