// GET /metrics after real traffic through both surfaces (fetch for REST, @trpc/client for tRPC),
// read with a third-party Prometheus text parser: counts per route pattern and status, the latency
// histogram, the refusal/replay/503 counters, the PostgreSQL pool gauges, labels that stay bounded
// whatever paths callers send, and nothing secret in the output. Servers are real (SQLite, and
// PostgreSQL where the pool is the subject).
import { createTRPCClient, httpBatchLink, httpLink } from '@trpc/client';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AppRouter } from '../src/api/root-router.js';
import { appRouter } from '../src/api/root-router.js';
import { DROPPED_DEFAULT_METRICS, ROUTE_LABELS } from '../src/observability/metrics.js';
import { scrape, type Sample } from './support/prometheus.js';
import { API_KEY, json, startTestServer, TEST_CONFIG, type TestServer } from './support/test-server.js';

/** The histogram's upper bounds, as the exposition writes them. */
const BUCKET_BOUNDS = ['0.001', '0.0025', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10'];

function trpcClient(server: TestServer, link: typeof httpLink | typeof httpBatchLink = httpLink) {
  return createTRPCClient<AppRouter>({
    links: [link({ url: `${server.baseUrl}/trpc`, headers: { authorization: `Bearer ${API_KEY}` } })],
  });
}

/** `surface route method status` → count, for every request series except the scrapes themselves. */
function requestCounts(samples: Sample[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { labels, value } of samples) {
    if (labels.route === '/metrics') continue;
    counts[`${labels.surface} ${labels.route} ${labels.method} ${labels.status_code}`] = value;
  }
  return counts;
}

/**
 * Scrapes until `check` passes: a request is counted once its response has been sent, which can be
 * a moment after the client has read it.
 */
async function eventually<T>(baseUrl: string, check: (scraped: Awaited<ReturnType<typeof scrape>>) => T): Promise<T> {
  return vi.waitFor(async () => check(await scrape(baseUrl)), { timeout: 5_000, interval: 50 });
}

describe('GET /metrics on a service with traffic on both surfaces', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ provider: 'sqlite' });
  });
  afterAll(() => server.close());

  it("is public Prometheus text with Node's process metrics", async () => {
    const response = await fetch(`${server.baseUrl}/metrics`); // no key
    expect(response.status).toBe(200);
    const scraped = await scrape(server.baseUrl);
    expect(scraped.types.get('process_resident_memory_bytes')).toBe('GAUGE');
    expect(scraped.types.get('nodejs_heap_size_used_bytes')).toBe('GAUGE');
    expect(scraped.types.get('nodejs_eventloop_lag_p99_seconds')).toBe('GAUGE');
    expect(scraped.types.get('nodejs_gc_duration_seconds')).toBe('HISTOGRAM');
    expect(scraped.types.get('http_requests_total')).toBe('COUNTER');
    expect(scraped.types.get('http_request_duration_seconds')).toBe('HISTOGRAM');
    expect(scraped.value('process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(scraped.value('process_resident_memory_bytes')).toBeGreaterThan(10_000_000);
    // SQLite has no connection pool: no pool gauges rather than made-up ones.
    expect([...scraped.types.keys()].filter((name) => name.includes('pool'))).toEqual([]);
  });

  it('says what runs: version, commit and Node release in animal_store_build_info', async () => {
    const scraped = await scrape(server.baseUrl);
    expect(scraped.types.get('animal_store_build_info')).toBe('GAUGE');
    const [info, ...others] = scraped.series('animal_store_build_info');
    expect(others).toEqual([]);
    // The test server's settings come from the sources (no dist/build-info.json beside them).
    expect(info).toEqual({ name: 'animal_store_build_info', labels: { ...TEST_CONFIG.build, node: process.version }, value: 1 });
    expect(TEST_CONFIG.build).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+/), commit: 'unknown' });
  });

  it("leaves out prom-client's gauges named like counters, keeping the labelled ones they sum", async () => {
    const scraped = await scrape(server.baseUrl);
    for (const name of DROPPED_DEFAULT_METRICS) {
      expect(scraped.types.has(name), name).toBe(false);
      expect(scraped.types.get(name.replace(/_total$/, '')), name).toBe('GAUGE');
    }
    // Every other family named *_total is a counter (what promtool check metrics holds: npm run test:alerts).
    const totals = [...scraped.types].filter(([name]) => name.endsWith('_total'));
    expect(totals.length).toBeGreaterThan(5);
    for (const [name, type] of totals) expect(type, name).toBe('COUNTER');
  });

  it('counts each request by surface, route pattern, method and status, never by URL', async () => {
    // REST, through fetch.
    for (let i = 0; i < 3; i++) expect((await server.request('/v1/pets?limit=5')).status).toBe(200);
    const pet = await json(server.post('/v1/pets', { name: 'Counted', categoryId: 1 }));
    expect((await server.post('/v1/pets', { name: 'Counted too', categoryId: 1 })).status).toBe(201);
    expect((await server.request(`/v1/pets/${pet.id}`)).status).toBe(200);
    expect((await server.request('/v1/pets/999999')).status).toBe(404);
    expect((await server.request('/v1/pets/abc')).status).toBe(400);
    expect((await server.request('/v1/pets', { headers: { authorization: '' } })).status).toBe(401);
    expect((await server.request('/v1/nothing-here')).status).toBe(404);
    expect((await server.request('/v1/pets', { method: 'DELETE' })).status).toBe(405);
    // tRPC, through its own client: single calls, then two calls batched into one request.
    const trpc = trpcClient(server);
    await trpc.pets.list.query({ limit: 2 });
    await trpc.pets.list.query();
    await trpc.pets.create.mutate({ name: 'Counted over tRPC', categoryId: 2 });
    await expect(trpc.pets.get.query({ petId: 999_999 })).rejects.toThrow(/No pet has id/);
    const batching = trpcClient(server, httpBatchLink);
    await Promise.all([batching.pets.list.query({ limit: 1 }), batching.pets.get.query({ petId: pet.id })]);
    expect((await server.request('/trpc/no.such.procedure')).status).toBe(404);
    // Neither surface.
    expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${server.baseUrl}/elsewhere/${pet.id}`)).status).toBe(404);

    await eventually(server.baseUrl, (scraped) => {
      expect(requestCounts(scraped.series('http_requests_total'))).toEqual({
        'rest /v1/pets GET 200': 3,
        'rest /v1/pets POST 201': 2,
        'rest /v1/pets/{petId} GET 200': 1,
        'rest /v1/pets/{petId} GET 404': 1,
        'rest /v1/pets/{petId} GET 400': 1,
        'rest /v1/pets GET 401': 1,
        'rest (unmatched) GET 404': 1,
        'rest (unmatched) DELETE 405': 1,
        'trpc pets.list GET 200': 2,
        'trpc pets.create POST 200': 1,
        'trpc pets.get GET 404': 1,
        'trpc (batch) GET 200': 1,
        'trpc (unmatched) GET 404': 1,
        'other /healthz GET 200': 1,
        'other (unmatched) GET 404': 1,
      });
      // The batch is one request above; its calls are counted by procedure here.
      expect(scraped.value('animal_store_trpc_batched_calls_total', { procedure: 'pets.list' })).toBe(1);
      expect(scraped.value('animal_store_trpc_batched_calls_total', { procedure: 'pets.get' })).toBe(1);
      expect(scraped.value('animal_store_authentication_failures_total', { surface: 'rest', reason: 'missing_key' })).toBe(1);
    });
  });

  it('has a latency histogram per series with the documented buckets, cumulative, matching the count', async () => {
    const before = (await scrape(server.baseUrl)).value('http_requests_total', { route: '/healthz' }) ?? 0;
    for (let i = 0; i < 4; i++) await fetch(`${server.baseUrl}/healthz`);
    await eventually(server.baseUrl, (scraped) => {
      const labels = { surface: 'other', route: '/healthz', method: 'GET', status_code: '200' };
      const count = scraped.value('http_request_duration_seconds_count', labels)!;
      expect(count).toBe(before + 4);
      expect(count).toBe(scraped.value('http_requests_total', labels));
      const buckets = scraped.series('http_request_duration_seconds_bucket', labels);
      expect(buckets.map((bucket) => bucket.labels.le)).toEqual([...BUCKET_BOUNDS, '+Inf']);
      const cumulative = buckets.map((bucket) => bucket.value);
      expect(cumulative).toEqual([...cumulative].sort((a, b) => a - b));
      expect(cumulative.at(-1)).toBe(count);
      expect(cumulative.at(-2)).toBe(count); // a health check takes less than 10 s
      const sum = scraped.value('http_request_duration_seconds_sum', labels)!;
      expect(sum).toBeGreaterThan(0);
      expect(sum).toBeLessThan(count * 10);
    });
  });

  it('counts idempotent replays on each surface', async () => {
    const headers = { 'idempotency-key': 'metrics-replay-1' };
    expect((await server.post('/v1/pets', { name: 'Once', categoryId: 3 }, headers)).status).toBe(201);
    const replay = await server.post('/v1/pets', { name: 'Once', categoryId: 3 }, headers);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const trpcCreate = () =>
      server.post('/trpc/pets.create', { name: 'Once over tRPC', categoryId: 3 }, { 'idempotency-key': 'metrics-replay-2' });
    await trpcCreate();
    expect((await trpcCreate()).headers.get('idempotent-replayed')).toBe('true');
    await eventually(server.baseUrl, (scraped) => {
      expect(scraped.value('animal_store_idempotent_replays_total', { surface: 'rest' })).toBe(1);
      expect(scraped.value('animal_store_idempotent_replays_total', { surface: 'trpc' })).toBe(1);
    });
  });

  it('keeps label values bounded whatever paths and methods callers send', async () => {
    const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];
    const prefixes = ['/', '/v1/', '/v1/pets/', '/trpc/', '/trpc/pets.list,', '/healthz/', '/metrics/', '/v1/docs/'];
    const paths = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...methods),
        fc.constantFrom(...prefixes),
        fc.oneof(
          fc.webPath({ size: 'large' }),
          fc.string({ unit: 'grapheme', size: 'max', maxLength: 300 }).map(encodeURIComponent),
          fc.string({ unit: 'binary-ascii', size: 'max', maxLength: 300 }).map((text) => text.replace(/[^\x21-\x7e]|[#?%]/g, '')),
        ),
        async (method, prefix, rest) => {
          const path = `${prefix}${rest}`.replace(/^\/\//, '/');
          paths.add(path);
          const response = await server.request(path, { method });
          await response.arrayBuffer();
          expect(response.status).toBeLessThan(500);
        },
      ),
      { numRuns: 300 },
    );
    // Every route label is a tRPC procedure, a route Fastify has for that method, or a fixed value.
    const procedures = Object.keys(appRouter._def.procedures);
    const isRegistered = (method: string, route: string) =>
      server.app.hasRoute({ method: method, url: route.replace(/\{(\w+)\}/g, ':$1') });
    const scraped = await scrape(server.baseUrl);
    const series = scraped.series('http_requests_total');
    for (const { labels } of series) {
      const { surface = '', route = '', method = '', status_code: status = '' } = labels;
      expect(['rest', 'trpc', 'other']).toContain(surface);
      expect([...methods, 'OTHER']).toContain(method);
      expect(status).toMatch(/^[1-5]\d\d$/);
      const known =
        route === ROUTE_LABELS.unmatched ||
        (surface === 'trpc' ? procedures.includes(route) || route === ROUTE_LABELS.batch : isRegistered(method, route));
      expect(known, `route label ${route} (${surface} ${method})`).toBe(true);
    }
    // Hundreds of different URLs, and a few dozen series: one per route, method and status seen.
    expect(paths.size).toBeGreaterThan(200);
    expect(series.length).toBeLessThan(80);
  });

  it('holds no key, Authorization header, pet or URL a caller sent', async () => {
    const wrongKey = 'wrong-key-that-must-not-leak-4567';
    const secretName = 'Secret-pet-name-9f2c';
    const pet = await json(server.post('/v1/pets', { name: secretName, categoryId: 4 }));
    await server.request(`/v1/pets/${pet.id}?apiKey=${API_KEY}`);
    await server.request('/v1/pets', { headers: { authorization: `Bearer ${wrongKey}` } });
    await server.request(`/v1/${wrongKey}`);
    await server.request(`/trpc/${API_KEY}`);
    await fetch(`${server.baseUrl}/healthz?token=${wrongKey}`, { headers: { authorization: `Bearer ${API_KEY}` } });
    const { text } = await eventually(server.baseUrl, (scraped) => {
      expect(scraped.value('animal_store_authentication_failures_total', { surface: 'rest', reason: 'invalid_key' })).toBeGreaterThan(0);
      return scraped;
    });
    expect(text).toContain('http_requests_total{'); // the output does hold these requests' series
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain(wrongKey);
    expect(text).not.toContain(secretName);
    expect(text).not.toMatch(/authorization|bearer|token=|apiKey/i);
    expect(text).not.toContain(`/v1/pets/${pet.id}`);
  });
});

describe('rate-limit refusals and authentication failures', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ provider: 'sqlite', config: { rateLimitPerMinute: 2, authFailuresPerMinute: 1 } });
  });
  afterAll(() => server.close());

  it('counts 429s by limit and 401s by reason, on each surface', async () => {
    const scraped = await scrape(server.baseUrl);
    // Every refusal series exists from the start, at 0, so alerts have something to read.
    for (const surface of ['rest', 'trpc']) {
      expect(scraped.value('animal_store_rate_limit_refusals_total', { surface, limit: 'per_key' })).toBe(0);
      expect(scraped.value('animal_store_authentication_failures_total', { surface, reason: 'invalid_key' })).toBe(0);
    }
    expect(scraped.value('animal_store_database_unavailable_total', { surface: 'rest' })).toBe(0);

    // A minute's window: two requests per key, then 429 (REST, then tRPC with the same key).
    expect((await server.request('/v1/pets')).status).toBe(200);
    expect((await server.request('/trpc/pets.list')).status).toBe(200);
    expect((await server.request('/v1/pets')).status).toBe(429);
    expect((await server.request('/trpc/pets.list')).status).toBe(429);
    // One wrong key per address, then that address is refused with 429 whatever key it sends.
    expect((await server.request('/v1/pets', { headers: { authorization: 'Bearer wrong-key-0123456789abcdef' } })).status).toBe(401);
    expect((await server.request('/trpc/pets.list', { headers: { authorization: 'Bearer wrong-key-0123456789abcdef' } })).status).toBe(429);
    expect((await server.request('/trpc/pets.list', { headers: { authorization: '' } })).status).toBe(401);

    await eventually(server.baseUrl, (after) => {
      expect(after.value('animal_store_rate_limit_refusals_total', { surface: 'rest', limit: 'per_key' })).toBe(1);
      expect(after.value('animal_store_rate_limit_refusals_total', { surface: 'trpc', limit: 'per_key' })).toBe(1);
      expect(after.value('animal_store_rate_limit_refusals_total', { surface: 'trpc', limit: 'auth_failures' })).toBe(1);
      expect(after.value('animal_store_rate_limit_refusals_total', { surface: 'rest', limit: 'auth_failures' })).toBe(0);
      expect(after.value('animal_store_authentication_failures_total', { surface: 'rest', reason: 'invalid_key' })).toBe(1);
      expect(after.value('animal_store_authentication_failures_total', { surface: 'trpc', reason: 'missing_key' })).toBe(1);
      expect(after.value('http_requests_total', { surface: 'rest', route: '/v1/pets', status_code: '429' })).toBe(1);
    });
  });
});

describe('on PostgreSQL: the connection pool and database errors answered 503', () => {
  let server: TestServer;
  beforeAll(async () => {
    // Queries wait longer than /metrics keeps one rendering (a second), so that a scrape sees them.
    server = await startTestServer({
      provider: 'postgresql',
      databaseSettings: { DATABASE_POOL_SIZE: '2', DATABASE_QUERY_TIMEOUT_MS: '2500', DATABASE_CONNECT_TIMEOUT_MS: '10000' },
    });
  });
  afterAll(() => server.close());

  it("reports the pool's open, idle, in-use and waiting counts and its size", async () => {
    await Promise.all([server.request('/v1/pets'), server.request('/v1/pets'), server.request('/trpc/pets.list')]);
    const scraped = await scrape(server.baseUrl);
    for (const name of [
      'animal_store_db_pool_connections',
      'animal_store_db_pool_idle_connections',
      'animal_store_db_pool_connections_in_use',
      'animal_store_db_pool_waiting_queries',
    ]) {
      expect(scraped.types.get(name)).toBe('GAUGE');
    }
    expect(scraped.value('animal_store_db_pool_max_connections')).toBe(2);
    const open = scraped.value('animal_store_db_pool_connections')!;
    expect(open).toBeGreaterThanOrEqual(1);
    expect(open).toBeLessThanOrEqual(2);
    expect(scraped.value('animal_store_db_pool_idle_connections')).toBe(open); // nothing in flight…
    expect(scraped.value('animal_store_db_pool_connections_in_use')).toBe(0); // …so open connections are not "in use"
    expect(scraped.value('animal_store_db_pool_waiting_queries')).toBe(0);
  });

  it('shows queries waiting while the pool is exhausted, and counts the 503s that follow', async () => {
    // Another session locks the table: every query on it waits until the statement timeout.
    const locker = new pg.Client({ connectionString: server.databaseUrl });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE pets IN ACCESS EXCLUSIVE MODE');
      // Two take the connections, one at a time (a turn's statements would share one); three wait.
      const requests = [];
      for (const inUse of [1, 2]) {
        requests.push(server.request('/v1/pets'));
        await vi.waitFor(
          () => {
            const { total, idle } = server.database.poolStats()!;
            expect(total - idle).toBe(inUse);
          },
          { interval: 5 },
        );
      }
      requests.push(server.request('/v1/pets'), server.request('/v1/pets'), server.request('/trpc/pets.list'));
      await eventually(server.baseUrl, (scraped) => {
        expect(scraped.value('animal_store_db_pool_connections')).toBe(2);
        expect(scraped.value('animal_store_db_pool_idle_connections')).toBe(0);
        expect(scraped.value('animal_store_db_pool_connections_in_use')).toBe(2); // = animal_store_db_pool_max_connections
        expect(scraped.value('animal_store_db_pool_waiting_queries')).toBe(3);
      });
      const statuses = await Promise.all(requests.map(async (request) => (await request).status));
      expect(statuses).toEqual([503, 503, 503, 503, 503]);
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    await eventually(server.baseUrl, (scraped) => {
      expect(scraped.value('animal_store_database_unavailable_total', { surface: 'rest' })).toBe(4);
      expect(scraped.value('animal_store_database_unavailable_total', { surface: 'trpc' })).toBe(1);
      expect(scraped.value('http_requests_total', { surface: 'rest', route: '/v1/pets', status_code: '503' })).toBe(4);
      expect(scraped.value('animal_store_db_pool_waiting_queries')).toBe(0);
    });
    expect((await server.request('/v1/pets')).status).toBe(200); // and it serves again
  });
});

describe('scraping in a loop', () => {
  it('renders the text at most once a second, shared by every scrape meanwhile, while a client is served', async () => {
    const server = await startTestServer({ provider: 'sqlite' });
    try {
      const started = Date.now();
      let scraping = true;
      const bodies = new Set<string>();
      let scrapes = 0;
      const scraper = async () => {
        while (scraping) {
          const response = await fetch(`${server.baseUrl}/metrics`);
          expect(response.status).toBe(200);
          bodies.add(await response.text());
          scrapes++;
        }
      };
      const scrapers = Array.from({ length: 4 }, scraper);
      try {
        for (let i = 0; i < 40; i++) expect((await server.request('/v1/pets?limit=1')).status).toBe(200);
      } finally {
        scraping = false;
        await Promise.all(scrapers);
      }
      // Each rendering differs (the scrapes themselves are counted), so distinct bodies are renderings.
      const seconds = (Date.now() - started) / 1_000;
      expect(scrapes).toBeGreaterThan(bodies.size);
      expect(bodies.size).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
    } finally {
      await server.close();
    }
  });
});

describe('settings', () => {
  it('METRICS_ENABLED=false: no /metrics (404 in the envelope), and the service serves as before', async () => {
    const server = await startTestServer({ provider: 'sqlite', config: { metricsEnabled: false } });
    try {
      const response = await fetch(`${server.baseUrl}/metrics`);
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ code: 'NOT_FOUND', status: 404 });
      expect((await server.request('/v1/pets')).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it("METRICS_PORT: /metrics on a listener of its own (not on the service port), counting the service's requests, closed with it", async () => {
    const server = await startTestServer({ provider: 'sqlite', config: { metricsPort: 0, metricsHost: '127.0.0.1' } });
    let metricsUrl = '';
    try {
      const address = server.app.metricsServer?.server.address();
      if (!address || typeof address === 'string') throw new Error('the metrics server is not listening');
      metricsUrl = `http://127.0.0.1:${address.port}`;
      expect(metricsUrl).not.toBe(server.baseUrl);
      expect((await fetch(`${server.baseUrl}/metrics`)).status).toBe(404);
      expect((await server.request('/v1/pets')).status).toBe(200);
      await eventually(metricsUrl, (scraped) => {
        expect(scraped.value('http_requests_total', { surface: 'rest', route: '/v1/pets', status_code: '200' })).toBe(1);
      });
      expect((await fetch(`${metricsUrl}/v1/pets`)).status).toBe(404);
    } finally {
      await server.close();
    }
    await expect(fetch(`${metricsUrl}/metrics`)).rejects.toThrow();
  });
});
