// /healthz and /readyz: what a load balancer probes. Public, no data, the error envelope on 503.
// Readiness means "this instance can serve" (docs/decisions.md, "Readiness"): it fails while the
// instance stops, and on a SQLite file (its own storage) while the file does not answer; a shared
// PostgreSQL being down is reported in the body but does not take the instance out.
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteFilePath } from '../src/db/providers.js';
import { expectError } from './support/expect-error.js';
import { startOutageServer, type OutageServer } from './support/outage-server.js';
import { json, startTestServer, type TestServer } from './support/test-server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ provider: 'sqlite' });
});
afterAll(() => server.close());

describe('GET /healthz (liveness)', () => {
  it('answers 200 {"status":"ok"} without a key', async () => {
    const response = await fetch(`${server.baseUrl}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('is at the root only, not under /v1', async () => {
    await expectError(await server.request('/v1/healthz'), 404, 'NOT_FOUND');
  });
});

describe('GET /readyz (readiness)', () => {
  it('answers 200 without a key while the database answers, and says so', async () => {
    const response = await fetch(`${server.baseUrl}/readyz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok', database: 'up' });
  });

  it('answers 503 SERVICE_UNAVAILABLE in the envelope when its SQLite file is gone', async () => {
    const broken = await startTestServer({ provider: 'sqlite' });
    try {
      // Closed, and its directory removed: reopening the file (Prisma reconnects on demand) fails.
      await broken.database.close();
      rmSync(dirname(sqliteFilePath(broken.databaseUrl)), { recursive: true, force: true });
      const response = await fetch(`${broken.baseUrl}/readyz`);
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const body = await expectError(response, 503, 'SERVICE_UNAVAILABLE', /database/);
      expect(JSON.stringify(body)).not.toMatch(/directory|sqlite|\.db/i); // the cause stays in the log
      expect((await fetch(`${broken.baseUrl}/healthz`)).status).toBe(200); // alive, just not ready
    } finally {
      await broken.close();
    }
  });

  it('gives no data away', async () => {
    await server.post('/v1/pets', { name: 'Hidden', categoryId: 1 });
    const text = await (await fetch(`${server.baseUrl}/readyz`)).text();
    expect(text).toBe('{"status":"ok","database":"up"}');
    expect(await json(server.request('/v1/pets'))).toHaveLength(1);
  });
});

describe('GET /readyz while the instance drains (the stop, src/main.ts)', () => {
  it('answers 503 with Retry-After at once, while the API still answers, each answer with Connection: close', async () => {
    const draining = await startTestServer({ provider: 'sqlite' });
    try {
      draining.app.beginDraining();
      const ready = await fetch(`${draining.baseUrl}/readyz`);
      expect(Number(ready.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      await expectError(ready, 503, 'SERVICE_UNAVAILABLE', /shutting down/);
      const list = await draining.request('/v1/pets');
      expect(list.status).toBe(200);
      expect(list.headers.get('connection')).toBe('close');
      expect((await draining.post('/v1/pets', { name: 'During the drain', categoryId: 1 })).status).toBe(201);
      expect((await fetch(`${draining.baseUrl}/healthz`)).status).toBe(200); // alive: not to be restarted
    } finally {
      await draining.close();
    }
  });
});

describe('GET /readyz on a shared PostgreSQL that stops', () => {
  let outage: OutageServer;
  beforeAll(async () => {
    outage = await startOutageServer();
  });
  afterAll(() => outage?.close());

  it('stays 200 and reports the database down, while requests get the service\'s own 503; "up" again after', async () => {
    const { cluster, server: instance } = outage;
    expect((await fetch(`${instance.baseUrl}/readyz`)).status).toBe(200);

    await cluster.stop();
    // Every instance shares this database: taking them all out would leave the balancer's own
    // page instead of the service's 503 with Retry-After (docs/decisions.md, "Readiness").
    const ready = await fetch(`${instance.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok', database: 'down' });
    const refused = await instance.request('/v1/pets', { signal: AbortSignal.timeout(20_000) });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    await expectError(refused, 503, 'SERVICE_UNAVAILABLE', /database/);

    await cluster.start();
    expect((await instance.request('/v1/pets')).status).toBe(200);
    expect(await (await fetch(`${instance.baseUrl}/readyz`)).json()).toEqual({ status: 'ok', database: 'up' });
  });
});

describe('GET /readyz on a shared PostgreSQL that is slow', () => {
  it('answers 200 before the database does: a balancer check never times out on it', async () => {
    // One pooled connection, held by a statement that sleeps: the probe's SELECT 1 must wait for it.
    const slow = await startTestServer({ provider: 'postgresql', databaseSettings: { DATABASE_POOL_SIZE: '1' } });
    try {
      let released = false;
      const held = slow.database.prisma.$queryRawUnsafe('SELECT pg_sleep(3) IS NULL AS slept').then(() => (released = true));
      await new Promise((resolve) => setTimeout(resolve, 200)); // the statement has the connection
      const ready = await fetch(`${slow.baseUrl}/readyz`);
      expect(released).toBe(false);
      expect(ready.status).toBe(200);
      await held;
    } finally {
      await slow.close();
    }
  });
});
