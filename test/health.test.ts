// /healthz and /readyz: what a load balancer probes. Public, no data, the error envelope on 503.
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteFilePath } from '../src/db/providers.js';
import { expectError } from './support/expect-error.js';
import { json, startTestServer, type TestServer } from './support/test-server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
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
  it('answers 200 {"status":"ok"} without a key while the database answers', async () => {
    const response = await fetch(`${server.baseUrl}/readyz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('answers 503 SERVICE_UNAVAILABLE in the envelope when the database is gone', async () => {
    const broken = await startTestServer();
    try {
      // Closed, and its directory removed: reopening the file (Prisma reconnects on demand) fails.
      await broken.database.close();
      rmSync(dirname(sqliteFilePath(broken.databaseUrl)), { recursive: true, force: true });
      const body = await expectError(await fetch(`${broken.baseUrl}/readyz`), 503, 'SERVICE_UNAVAILABLE', /database/);
      expect(JSON.stringify(body)).not.toMatch(/directory|sqlite|\.db/i); // the cause stays in the log
      expect((await fetch(`${broken.baseUrl}/healthz`)).status).toBe(200); // alive, just not ready
    } finally {
      await broken.close();
    }
  });

  it('gives no data away', async () => {
    await server.post('/v1/pets', { name: 'Hidden', categoryId: 1 });
    const text = await (await fetch(`${server.baseUrl}/readyz`)).text();
    expect(text).toBe('{"status":"ok"}');
    expect(await json(server.request('/v1/pets'))).toHaveLength(1);
  });
});
