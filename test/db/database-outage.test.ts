// The database going away under a running service: requests answer 503 in the error envelope
// (tRPC: SERVICE_UNAVAILABLE) instead of hanging or answering 500, and when the database is back
// the same process serves again, with every write it acknowledged still there.
import Sqlite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteFilePath } from '../../src/db/providers.js';
import { expectError } from '../support/expect-error.js';
import { startOutageServer, type OutageServer } from '../support/outage-server.js';
import type { PrivatePostgres } from '../support/private-postgres.js';
import { json, startTestServer, type TestServer } from '../support/test-server.js';

/** No request may hang: one that has no answer by then fails the test (a bound, not a speed test). */
const NO_HANG = () => AbortSignal.timeout(20_000);

async function expectUnavailable(server: TestServer): Promise<void> {
  const requests = [
    server.request('/v1/pets', { signal: NO_HANG() }),
    server.request('/v1/pets?status=sold&limit=5', { signal: NO_HANG() }),
    server.request('/v1/pets/1', { signal: NO_HANG() }),
    server.request('/v1/pets', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Unsaved', categoryId: 1 }),
      signal: NO_HANG(),
    }),
  ];
  for (const response of await Promise.all(requests)) {
    await expectError(response, 503, 'SERVICE_UNAVAILABLE', /database is unavailable/);
  }
  const trpc = await server.request('/trpc/pets.list', { signal: NO_HANG() });
  expect(trpc.status).toBe(503);
  const body = await json(trpc);
  expect(body.error.data.code).toBe('SERVICE_UNAVAILABLE');
  expect(JSON.stringify(body)).not.toMatch(/127\.0\.0\.1|prisma|ECONNREFUSED|stack/i);
}

describe('PostgreSQL stopped under a running service', () => {
  let outage: OutageServer;
  let cluster: PrivatePostgres;
  let server: TestServer;

  beforeAll(async () => {
    outage = await startOutageServer();
    ({ cluster, server } = outage);
  });
  afterAll(() => outage?.close());

  it('answers 503 while it is down, then serves again by itself with every acknowledged write kept', async () => {
    const acknowledged = [];
    for (const name of ['Rex', 'Tom', 'Kit']) {
      const response = await server.post('/v1/pets', { name, categoryId: 1 });
      expect(response.status).toBe(201);
      acknowledged.push(await json(response));
    }

    await cluster.stop();
    await expectUnavailable(server);
    await expectUnavailable(server); // and again: nothing queued up, nothing wedged

    await cluster.start();
    const created = await server.post('/v1/pets', { name: 'After', categoryId: 2 });
    expect(created.status).toBe(201);
    const listed = await json(server.request('/v1/pets'));
    expect(listed).toEqual([...acknowledged, await json(created)]);
    expect((await server.request('/trpc/pets.list')).status).toBe(200);
  });
});

describe('SQLite locked by another process past the busy timeout', () => {
  it('answers 503 while the lock is held, and serves again once it is released', async () => {
    const server = await startTestServer({ provider: 'sqlite' });
    try {
      expect((await server.post('/v1/pets', { name: 'Before', categoryId: 1 })).status).toBe(201);
      // Another connection (as another process would) takes the write lock and keeps it.
      const other = new Sqlite(sqliteFilePath(server.databaseUrl));
      other.exec('BEGIN EXCLUSIVE');
      try {
        const response = await server.post('/v1/pets', { name: 'Blocked', categoryId: 1 });
        await expectError(response, 503, 'SERVICE_UNAVAILABLE', /database is unavailable/);
      } finally {
        other.exec('ROLLBACK');
        other.close();
      }
      expect((await server.post('/v1/pets', { name: 'After', categoryId: 1 })).status).toBe(201);
      expect((await json(server.request('/v1/pets'))).map((pet: { name: string }) => pet.name)).toEqual(['Before', 'After']);
    } finally {
      await server.close();
    }
  });
});
