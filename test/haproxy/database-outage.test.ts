// A database outage behind a real HAProxy gives clients the service's own 503s, never the
// balancer's page, and traffic returns within seconds of the database: three instances on a
// PostgreSQL cluster of the test's own (never the machine's shared server), HAProxy checking
// /readyz, steady kept-alive load (REST creates and lists, tRPC lists); the cluster stopped for
// about 2 s, then started again. /readyz does not follow the shared database (docs/decisions.md,
// "Readiness"), so HAProxy keeps every instance in rotation and each answers 503 with Retry-After
// in the envelope (tRPC's shape under /trpc). The same through PgBouncer set up as
// docs/operations.md says (`server_login_retry = 1`).
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startPrivateHaproxy, type PrivateHaproxy } from '../support/private-haproxy.js';
import { startPrivatePgBouncer, type PrivatePgBouncer } from '../support/private-pgbouncer.js';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { createTestDatabase } from '../support/test-database.js';
import { acknowledgedIds, startSteadyLoad, unsuccessful, type Exchange } from '../support/steady-load.js';

const KEY = 'haproxy-outage-key-0123456789';
const CHECK = { inter: '500ms', fall: 2, rise: 2 };
const INSTANCES = 3;
const OUTAGE_MS = 2_000;
/** Traffic is back this long after the database is. */
const RECOVERY_MS = 3_000;

let cluster: PrivatePostgres | undefined;
let pooler: PrivatePgBouncer | undefined;
let haproxy: PrivateHaproxy | undefined;
let services: ServiceProcess[] = [];
afterEach(async () => {
  await haproxy?.stop();
  await Promise.all(services.map((service) => service.stop()));
  await pooler?.stop();
  await cluster?.destroy();
  [haproxy, pooler, cluster, services] = [undefined, undefined, undefined, []];
});

/** What a client may see while the database is away: the service's own 503, in the surface's shape. */
function expectServiceUnavailable(exchange: Exchange): void {
  const seen = `${exchange.call} ${exchange.status ?? exchange.error} ${exchange.contentType}: ${exchange.body.slice(0, 200)}`;
  expect(exchange.status, seen).toBe(503);
  expect(exchange.contentType, seen).toMatch(/^application\/json/);
  expect(Number(exchange.retryAfter), seen).toBeGreaterThanOrEqual(1);
  const body = JSON.parse(exchange.body) as Record<string, unknown>;
  if (exchange.call === 'trpc-list')
    expect(body, seen).toMatchObject({ error: { data: { code: 'SERVICE_UNAVAILABLE', httpStatus: 503 } } });
  else expect(body, seen).toEqual({ code: 'SERVICE_UNAVAILABLE', status: 503, message: expect.any(String) });
}

async function outageUnderLoad(databaseUrl: string, migrationUrl: string): Promise<void> {
  const settings = {
    DATABASE_URL: databaseUrl,
    DATABASE_DIRECT_URL: migrationUrl,
    API_KEYS: KEY,
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    RATE_LIMIT_PER_MINUTE: '0',
    // Bounded waits, so that requests meeting the outage are answered inside it.
    DATABASE_CONNECT_TIMEOUT_MS: '1000',
    DATABASE_QUERY_TIMEOUT_MS: '2000',
  };
  services.push(await startServiceProcess(settings)); // migrates
  services.push(...(await Promise.all(Array.from({ length: INSTANCES - 1 }, () => startServiceProcess(settings)))));
  haproxy = await startPrivateHaproxy({
    servers: services.map((service, index) => ({ name: `s${index + 1}`, port: Number(new URL(service.baseUrl).port) })),
    check: CHECK,
  });
  for (let index = 0; index < INSTANCES; index++) await haproxy.waitFor(`s${index + 1}`, 'UP');

  const load = startSteadyLoad({
    baseUrl: haproxy.baseUrl,
    apiKey: KEY,
    restClients: 3,
    trpcClients: 1,
    maxRequestsPerClient: 20_000,
    maxMs: 60_000,
  });
  let stoppedAt: number;
  let returnedAt: number;
  try {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await cluster!.stop();
    stoppedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    await cluster!.start();
    returnedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, RECOVERY_MS + 2_000));
  } finally {
    await load.stop();
  }
  const exchanges = load.exchanges;

  // The outage was met, and what clients saw of it was the service's own 503, never HAProxy's page.
  const refused = unsuccessful(exchanges);
  expect(refused.filter((e) => e.sentAt >= stoppedAt - 1_000).length).toBeGreaterThan(0);
  for (const exchange of refused) expectServiceUnavailable(exchange);
  // HAProxy kept every instance in rotation.
  expect(Object.values(await haproxy.states())).toEqual(['UP', 'UP', 'UP']);

  // Back within RECOVERY_MS of the database: everything sent after that succeeds, on every client.
  const late = exchanges.filter((e) => e.sentAt >= returnedAt + RECOVERY_MS);
  expect(new Set(late.map((e) => e.client)).size).toBe(4);
  expect(unsuccessful(late)).toEqual([]);

  // No acknowledged create was lost.
  const ids = acknowledgedIds(exchanges);
  const client = new pg.Client({ connectionString: migrationUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>('SELECT id FROM pets');
    const stored = new Set(rows.map((row) => Number(row.id)));
    expect(ids.filter((id) => !stored.has(id))).toEqual([]);
  } finally {
    await client.end();
  }
}

describe('PostgreSQL stopped for 2 s under load, behind HAProxy', () => {
  it("clients see only the service's 503 with Retry-After, and 2xx again within 3 s of its return", { timeout: 180_000 }, async () => {
    cluster = await startPrivatePostgres();
    const database = await createTestDatabase('postgresql', cluster.url());
    await outageUnderLoad(database.url, database.migrationUrl);
  });

  it('the same through PgBouncer with server_login_retry = 1 (docs/operations.md)', { timeout: 180_000 }, async () => {
    cluster = await startPrivatePostgres();
    const database = await createTestDatabase('postgresql', cluster.url());
    pooler = await startPrivatePgBouncer(database.migrationUrl, { serverLoginRetry: 1 });
    const pooled = new URL(pooler.url(new URL(database.migrationUrl).pathname.slice(1)));
    pooled.searchParams.set('pgbouncer', 'true');
    await outageUnderLoad(pooled.href, database.migrationUrl);
  });
});
