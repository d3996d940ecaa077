// What the operator reads when a dependency goes away under a running service (docs/observability.md,
// "Logs"): one warn line when it stops answering, naming it (PostgreSQL, PgBouncer, Redis) and where,
// with the cause in one short line, and one info line when it is back, with how long it was gone and
// how many requests it cost; no line per failed request and no stack at info level; each request's
// detail at debug level. Real private servers (a PostgreSQL cluster, Redis) stopped and
// started under requests; the machine's shared ones are never touched. Through PgBouncer (which
// side went away): test/pgbouncer/dependency-logs.test.ts, in npm run test:pgbouncer.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createApiKeyStore } from '../../src/auth/api-key-store.js';
import { atInfo, capturedLogger, expectMetric, INFO, STACK_OR_DRIVER_TEXT, WARN, type Entry } from '../support/dependency-lines.js';
import { startPrivatePostgres } from '../support/private-postgres.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('PostgreSQL stopped and started under requests', () => {
  it(
    'one line when it stops answering and one when it is back, with the requests refused; detail only at debug',
    { timeout: 90_000 },
    async () => {
      const cluster = await startPrivatePostgres();
      cleanups.push(() => cluster.destroy());
      const { logger, text, entries } = capturedLogger();
      const server = await startTestServer({
        provider: 'postgresql',
        postgresServerUrl: cluster.url(),
        databaseSettings: { DATABASE_CONNECT_TIMEOUT_MS: '2000', DATABASE_QUERY_TIMEOUT_MS: '3000' },
        logger,
      });
      cleanups.push(async () => {
        await server.app.close();
        await server.database.close();
      });
      // A key from the api_keys table: checking it needs the database (an API_KEYS key does not).
      const { key } = await createApiKeyStore(server.database.prisma).create('outage-client');
      const stored = { authorization: `Bearer ${key}` };
      expect((await server.request('/v1/pets', { headers: stored })).status).toBe(200);
      await expectMetric(server.baseUrl, 'postgresql', { up: 1, failed: 0 });

      await cluster.stop();
      let refused = 0;
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all([
          server.request('/v1/pets'),
          server.request('/v1/pets/1'),
          server.post('/v1/pets', { name: 'Unsaved', categoryId: 1 }),
          server.request('/trpc/pets.list'),
          server.request('/v1/pets', { headers: stored }),
          server.request('/trpc/pets.list', { headers: stored }),
        ]);
        for (const answer of answers) expect(answer.status).toBe(503);
        refused += answers.length;
      }
      // A balancer's readiness probe meets it too (on a shared database /readyz answers with the state
      // last seen: docs/decisions.md); it is not counted as a refused request.
      await fetch(`${server.baseUrl}/readyz`);
      await expectMetric(server.baseUrl, 'postgresql', { up: 0, failed: refused });

      await cluster.start();
      // The tracker tries the database once a second while it is down: the line comes without traffic.
      const back = await vi.waitFor(
        () => {
          const found = entries().filter((entry) => /PostgreSQL answers again/.test(entry.msg));
          expect(found).toHaveLength(1);
          return found[0]!;
        },
        { timeout: 20_000, interval: 100 },
      );
      expect((await server.request('/v1/pets')).status).toBe(200);
      await expectMetric(server.baseUrl, 'postgresql', { up: 1, failed: refused });

      const operator = atInfo(entries()).filter((entry) => entry.msg !== 'request completed');
      const down = operator.filter((entry) => entry.level >= WARN);
      expect(down).toHaveLength(1);
      expect(down[0]).toMatchObject({
        level: WARN,
        dependency: 'postgresql',
        target: `127.0.0.1:${cluster.port}/${new URL(server.databaseUrl).pathname.slice(1)}`,
        msg: expect.stringMatching(/^PostgreSQL is not answering: requests that need the database are answered 503/),
      });
      expect(down[0]!.cause).toEqual(expect.any(String));
      expect(String(down[0]!.cause)).not.toContain('\n');
      expect(back).toMatchObject({ level: INFO, dependency: 'postgresql', failedRequests: refused, downForMs: expect.any(Number) });
      expect(back.msg).toMatch(new RegExp(`after \\d+\\.\\d s; ${refused} requests were answered 503 meanwhile`));
      // Nothing else for the operator about it: no line per request, no stack, no driver's text.
      expect(operator.map((entry) => entry.msg).filter((msg) => /database|PostgreSQL|API key/i.test(msg))).toEqual([
        down[0]!.msg,
        back.msg,
      ]);
      const infoText = text
        .join('')
        .split('\n')
        .filter((line) => line !== '' && (JSON.parse(line) as Entry).level >= INFO);
      expect(infoText.join('\n')).not.toMatch(STACK_OR_DRIVER_TEXT);

      // At debug level each refused request's detail is there, on its own request's line.
      const detail = entries().filter((entry) => entry.level === 20 && entry.err !== undefined);
      expect(detail.length).toBeGreaterThanOrEqual(refused);
      expect(detail.map((entry) => entry.msg)).toEqual(
        expect.arrayContaining(['the database could not check an API key', 'service unavailable: the database could not answer']),
      );
      for (const entry of detail) expect(entry.reqId).toEqual(expect.any(String));
    },
  );
});

describe('Redis stopped and started under requests', () => {
  it('one line each way, naming Redis in its own words rather than the client library’s', { timeout: 90_000 }, async () => {
    const redis: PrivateRedis = await startPrivateRedis();
    cleanups.push(() => redis.stop());
    const { logger, text, entries } = capturedLogger();
    // A limit of 100: the first request leases 7 units (1/16 of it), so most requests below ask Redis.
    const server: TestServer = await startTestServer({
      provider: 'sqlite',
      config: { redisUrl: redis.url, rateLimitPerMinute: 100 },
      logger,
    });
    cleanups.push(() => server.close());
    expect((await server.request('/v1/pets')).status).toBe(200);

    await redis.stop();
    // Requests are still served (each instance counts on its own meanwhile).
    for (let request = 0; request < 40; request++) expect((await server.request('/v1/pets')).status).toBe(200);
    await redis.start();
    // The limiter tries Redis again with a request at most once a second: keep asking until it is back.
    await vi.waitFor(
      async () => {
        expect((await server.request('/v1/pets')).status).toBe(200);
        expect(entries().filter((entry) => /Redis answers again/.test(entry.msg))).toHaveLength(1);
      },
      { timeout: 20_000, interval: 200 },
    );

    const operator = atInfo(entries()).filter((entry) => /Redis/.test(entry.msg));
    expect(operator.map((entry) => entry.level)).toEqual([WARN, INFO]);
    expect(operator[0]).toMatchObject({
      dependency: 'redis',
      target: `127.0.0.1:${redis.port}`,
      msg: expect.stringMatching(/^Redis is not answering: request limits fall back to each instance's own counts/),
    });
    expect(String(operator[0]!.cause)).toMatch(/not connected|refused|no answer/);
    expect(operator[1]).toMatchObject({ dependency: 'redis', failedRequests: expect.any(Number), downForMs: expect.any(Number) });
    expect(operator[1]!.failedRequests).toBeGreaterThanOrEqual(20);
    const infoText = text
      .join('')
      .split('\n')
      .filter((line) => line !== '' && (JSON.parse(line) as Entry).level >= INFO);
    expect(infoText.filter((line) => (JSON.parse(line) as Entry).level >= WARN)).toHaveLength(1);
    expect(infoText.join('\n')).not.toMatch(STACK_OR_DRIVER_TEXT);
    await expectMetric(server.baseUrl, 'redis', { up: 1, failed: Number(operator[1]!.failedRequests) });
  });
});
