// The service behind PgBouncer in transaction pooling (the run's own, test/pgbouncer-setup.ts:
// 5 server connections per database, shared by every client connection), as operators scale it
// out (docs/operations.md, PgBouncer). With `?pgbouncer=true` in DATABASE_URL the hot path runs
// without named prepared statements and nothing relies on session state; migrations go to
// DATABASE_DIRECT_URL. Without the flag, what the pooler does (it refuses the statement_timeout
// startup parameter, or loses named statements between server connections) answers 503 with
// Retry-After, never 500, and the operator is told once what to set.
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiKeyStore } from '../../src/auth/api-key-store.js';
import { parseConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { expectError } from '../support/expect-error.js';
import { startPrivatePgBouncer, type PrivatePgBouncer } from '../support/private-pgbouncer.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { json, startTestServer, type TestServer } from '../support/test-server.js';

const KEY = 'pooled-key-0123456789abcdef';
/** Requests sent at once: more than the instances' pools and far more than PgBouncer's 5 server connections. */
const CONCURRENT = 200;
/** Process start-ups and a few thousand requests on a shared 2-core machine: a bound, not a speed test. */
const TEST_BOUND_MS = 180_000;

let running: ServiceProcess[] = [];
let poolers: PrivatePgBouncer[] = [];
let server: TestServer | undefined;
let database: TestDatabase | undefined;
afterEach(async () => {
  await Promise.all(running.map((instance) => instance.stop()));
  running = [];
  await Promise.all(poolers.map((pooler) => pooler.stop()));
  poolers = [];
  await server?.close();
  server = undefined;
  await database?.drop();
  database = undefined;
});

/** DATABASE_URL without `pgbouncer=true`: the pooler, as a service that was not told about it sees it. */
function withoutPoolerFlag(url: string): string {
  const unflagged = new URL(url);
  unflagged.searchParams.delete('pgbouncer');
  return unflagged.href;
}

async function startInstances(count: number, env: Record<string, string>): Promise<ServiceProcess[]> {
  const starts = await Promise.allSettled(Array.from({ length: count }, () => startServiceProcess(env)));
  running.push(...starts.flatMap((start) => (start.status === 'fulfilled' ? [start.value] : [])));
  for (const start of starts) if (start.status === 'rejected') throw start.reason;
  return running.slice(-count);
}

interface Answer {
  status: number;
  retryAfter: string | null;
  body: unknown;
}

/** Sends `count` requests at once, spread over the instances and over every kind of call; resolves with each answer. */
async function storm(instances: ServiceProcess[], count: number, keys: string[], petId = 1): Promise<Answer[]> {
  const call = async (i: number): Promise<Answer> => {
    const { baseUrl } = instances[i % instances.length]!;
    const headers: Record<string, string> = { authorization: `Bearer ${keys[i % keys.length]}`, 'content-type': 'application/json' };
    const pet = JSON.stringify({ name: `pooled-${i}`, categoryId: 1 + (i % 7) });
    const requests: Array<[string, RequestInit]> = [
      ['/v1/pets', { method: 'POST', headers, body: pet }],
      ['/v1/pets?limit=20', { headers }],
      ['/v1/pets?status=available&limit=5', { headers }],
      ['/trpc/pets.create', { method: 'POST', headers, body: pet }],
      [`/trpc/pets.list?input=${encodeURIComponent('{"limit":10}')}`, { headers }],
      ['/v1/pets', { method: 'POST', headers: { ...headers, 'idempotency-key': `storm-${i}` }, body: pet }],
      [`/v1/pets/${petId}`, { headers }],
    ];
    const [path, init] = requests[i % requests.length]!;
    const response = await fetch(baseUrl + path, { ...init, signal: AbortSignal.timeout(60_000) });
    const text = await response.text();
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: text ? (JSON.parse(text) as unknown) : null };
  };
  return Promise.all(Array.from({ length: count }, (_, i) => call(i)));
}

const statuses = (answers: Answer[]) => [...new Set(answers.map((answer) => answer.status))].sort();

describe('with pgbouncer=true in DATABASE_URL', () => {
  it(
    `two instances share the pooler: they migrate on DATABASE_DIRECT_URL, take ${CONCURRENT} concurrent calls of every kind twice with no 5xx, and see each other's writes`,
    { timeout: TEST_BOUND_MS },
    async () => {
      database = await createTestDatabase('pgbouncer');
      expect(database.url).toMatch(/[?&]pgbouncer=true/);
      const env = {
        DATABASE_URL: database.url,
        DATABASE_DIRECT_URL: database.migrationUrl,
        API_KEYS: KEY,
        LOG_LEVEL: 'info',
        RATE_LIMIT_PER_MINUTE: '0',
      };
      // Both start together on a fresh database: one migrates, the other finds it done.
      const instances = await startInstances(2, env);
      const migrated = instances.flatMap((instance) => instance.logs.filter((line) => line.msg === 'database migrated'));
      expect(migrated).toHaveLength(1);

      // A stored key, made through Prisma's adapter on the pooled URL: its lookup on every request
      // and its last-use bookkeeping go through the pooler too.
      const setup = await openDatabase(parseConfig({ DATABASE_URL: database.url }));
      const { key: storedKey } = await createApiKeyStore(setup.prisma).create('pooled');
      await setup.close();

      const [a, b] = instances as [ServiceProcess, ServiceProcess];
      const first = (await json(
        fetch(`${a.baseUrl}/v1/pets`, {
          method: 'POST',
          headers: { authorization: `Bearer ${storedKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'first', categoryId: 1 }),
        }),
      )) as { id: number };
      for (const round of [1, 2]) {
        const answers = await storm(instances, CONCURRENT, [KEY, storedKey], first.id);
        expect(statuses(answers), `round ${round}: ${JSON.stringify(answers.filter((a) => a.status >= 500).slice(0, 3))}`).toEqual([
          200, 201,
        ]);
      }

      // Every pet created through one instance is listed by the other, the same.
      const list = async (instance: ServiceProcess) => {
        const ids: number[] = [];
        for (let next: string | null = '/v1/pets?limit=100'; next !== null;) {
          const page = await fetch(instance.baseUrl + next, { headers: { authorization: `Bearer ${KEY}` } });
          expect(page.status).toBe(200);
          ids.push(...((await page.json()) as Array<{ id: number }>).map((pet) => pet.id));
          next = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1] ?? null;
        }
        return ids;
      };
      const [fromA, fromB] = await Promise.all([list(a), list(b)]);
      // Per round, 3 of every 7 calls create (REST, tRPC, idempotent REST); the second round's
      // idempotent creates repeat the first's keys and bodies, so they replay and add nothing.
      const kinds = Array.from({ length: CONCURRENT }, (_, i) => i % 7);
      const creates = 1 + 2 * kinds.filter((kind) => kind === 0 || kind === 3).length + kinds.filter((kind) => kind === 5).length;
      expect(fromA).toHaveLength(creates);
      expect(fromB).toEqual(fromA);
      for (const instance of instances) expect(instance.logs.filter((line) => Number(line.level) >= 50)).toEqual([]);
    },
  );

  it('starts through the pooler alone when nothing is pending, and refuses to migrate through it', { timeout: TEST_BOUND_MS }, async () => {
    database = await createTestDatabase('pgbouncer');
    // Pending migrations and no direct URL: the service stops, saying what to set.
    const refused = await startServiceProcess({ DATABASE_URL: database.url, API_KEYS: KEY, LOG_LEVEL: 'info' }).then(
      () => null,
      (error: Error) => error,
    );
    expect(refused?.message).toMatch(/exited with 1 before listening/);
    expect(refused?.message).toMatch(/DATABASE_DIRECT_URL/);
    // Nothing was applied through the pooler (no advisory lock left behind on a pooled connection).
    const direct = new pg.Client({ connectionString: database.migrationUrl });
    await direct.connect();
    try {
      const tables = await direct.query("SELECT count(*)::int AS n FROM pg_tables WHERE tablename = '_prisma_migrations'");
      expect(tables.rows[0].n).toBe(0);
      expect(
        (
          await direct.query(
            "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
          )
        ).rows[0].n,
      ).toBe(0);
    } finally {
      await direct.end();
    }

    // Migrated on the direct URL once; then a start with the pooled URL alone finds it up to date and serves.
    const first = (await startInstances(1, { DATABASE_URL: database.url, DATABASE_DIRECT_URL: database.migrationUrl, API_KEYS: KEY }))[0]!;
    await first.stop();
    running = [];
    const [instance] = await startInstances(1, { DATABASE_URL: database.url, API_KEYS: KEY, LOG_LEVEL: 'info' });
    expect(instance!.logs.some((line) => line.msg === 'database is up to date')).toBe(true);
    const created = await fetch(`${instance!.baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
    });
    expect(created.status).toBe(201);
  });

  it('bounds a statement by DATABASE_QUERY_TIMEOUT_MS on the client: 503 with Retry-After, and serves again after', async () => {
    // Through the pooler the statement_timeout startup parameter cannot be sent (PgBouncer
    // refuses the connection): the client's own timeout is the bound.
    server = await startTestServer({ provider: 'pgbouncer', databaseSettings: { DATABASE_QUERY_TIMEOUT_MS: '500' } });
    expect((await server.post('/v1/pets', { name: 'before', categoryId: 1 })).status).toBe(201);
    const direct = new pg.Client({ connectionString: server.databaseMigrationUrl });
    await direct.connect();
    try {
      await direct.query('BEGIN');
      await direct.query('LOCK TABLE pets IN ACCESS EXCLUSIVE MODE');
      const since = performance.now();
      const stuck = await server.request('/v1/pets?limit=5');
      const waited = performance.now() - since;
      expect(stuck.headers.get('retry-after')).toBe('2');
      await expectError(stuck, 503, 'SERVICE_UNAVAILABLE');
      expect(waited).toBeGreaterThanOrEqual(450);
      await direct.query('ROLLBACK');
    } finally {
      await direct.end();
    }
    expect((await server.request('/v1/pets?limit=5')).status).toBe(200);
  });
});

describe('without pgbouncer=true, behind a transaction pooler', () => {
  it.each([
    // Every connection refused: /readyz says the database is down (still 200: it is shared, docs/decisions.md).
    ['that refuses the statement_timeout startup parameter (PgBouncer as installed)', [], /^08P01$/, 'down'],
    // Connections accepted, named statements lost: the probe (an unnamed SELECT 1) still passes.
    [
      'told to ignore statement_timeout, so that named prepared statements meet its server connections',
      ['statement_timeout'],
      /^(26000|42P05)$/,
      'up',
    ],
  ])(
    `a pooler %s: 503 with Retry-After, never 500, over ${CONCURRENT} calls twice; the fix is logged once`,
    { timeout: TEST_BOUND_MS },
    async (_, ignoreStartupParameters, code, readiness) => {
      database = await createTestDatabase('pgbouncer');
      let url = withoutPoolerFlag(database.url);
      if (ignoreStartupParameters.length > 0) {
        const pooler = await startPrivatePgBouncer(database.migrationUrl, { ignoreStartupParameters });
        poolers.push(pooler);
        url = pooler.url(new URL(database.migrationUrl).pathname.slice(1));
      }
      const [instance] = await startInstances(1, {
        DATABASE_URL: url,
        DATABASE_DIRECT_URL: database.migrationUrl,
        API_KEYS: KEY,
        LOG_LEVEL: 'info',
        RATE_LIMIT_PER_MINUTE: '0',
      });
      const answers = [...(await storm([instance!], CONCURRENT, [KEY])), ...(await storm([instance!], CONCURRENT, [KEY]))];
      const refused = answers.filter((answer) => answer.status === 503);
      expect(refused.length).toBeGreaterThan(0);
      expect(statuses(answers).filter((status) => ![200, 201, 404, 503].includes(status))).toEqual([]);
      for (const answer of refused) {
        expect(answer.retryAfter).toBe('5');
        const body = answer.body as Record<string, unknown>;
        // REST: the envelope; tRPC: its own error shape.
        if ('status' in body) expect(body).toEqual({ code: 'SERVICE_UNAVAILABLE', status: 503, message: expect.any(String) });
        else expect(body).toMatchObject({ error: { data: { code: 'SERVICE_UNAVAILABLE', httpStatus: 503 } } });
      }
      const ready = await fetch(`${instance!.baseUrl}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ok', database: readiness });

      const hints = instance!.logs.filter((line) => String(line.msg).includes('pgbouncer=true'));
      expect(hints).toHaveLength(1);
      expect(hints[0]).toMatchObject({ level: 50, code: expect.stringMatching(code) });
      expect(hints[0]!.msg).toMatch(/transaction pooler.*Add pgbouncer=true to DATABASE_URL/);
    },
  );
});
