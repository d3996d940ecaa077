// Idempotent creates: the Idempotency-Key header on POST /v1/pets and pets.create.
import { createTRPCClient, httpLink } from '@trpc/client';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/root-router.js';
import { buildApp } from '../../src/app.js';
import { parseConfig } from '../../src/config.js';
import { migrateDatabase, openDatabase } from '../../src/db/database.js';
import { API_KEY, json, OTHER_API_KEY, startTestServer, TEST_CONFIG, type TestServer } from '../support/test-server.js';
import { expectError } from '../support/expect-error.js';
import { createTestDatabase } from '../support/test-database.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const rex = { name: 'Rex', categoryId: 3 };

describe('Idempotency-Key on createPet', () => {
  it('the same key and body replays the original 201 and creates nothing more', async () => {
    server = await startTestServer();
    const first = await server.post('/v1/pets', rex, { 'idempotency-key': 'order-1' });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const created = await json(first);

    const again = await server.post('/v1/pets', { categoryId: 3, name: 'Rex' }, { 'idempotency-key': 'order-1' });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await json(again)).toEqual(created);
    expect(await server.database.prisma.pet.count()).toBe(1);
  });

  it('the same key with a different body → 422 in the envelope, nothing created', async () => {
    server = await startTestServer();
    await server.post('/v1/pets', rex, { 'idempotency-key': 'order-2' });
    await expectError(
      await server.post('/v1/pets', { ...rex, name: 'Max' }, { 'idempotency-key': 'order-2' }),
      422,
      'UNPROCESSABLE_CONTENT',
      /Idempotency-Key/,
    );
    expect(await server.database.prisma.pet.count()).toBe(1);
  });

  it('concurrent requests with one key create one pet, and all get it', async () => {
    server = await startTestServer();
    const responses = await Promise.all(Array.from({ length: 20 }, () => server!.post('/v1/pets', rex, { 'idempotency-key': 'burst' })));
    expect(responses.map((response) => response.status)).toEqual(Array(20).fill(201));
    const ids = new Set((await Promise.all(responses.map(json))).map((pet) => pet.id));
    expect(ids.size).toBe(1);
    expect(await server.database.prisma.pet.count()).toBe(1);
  });

  it('plain creates racing idempotent ones (replays, refusals, rollbacks) are all kept', async () => {
    server = await startTestServer();
    await server.post('/v1/pets', rex, { 'idempotency-key': 'taken' });
    // Each refused (422) or replayed request runs a transaction that ends without writing; a
    // plain create must never be caught inside one of them and vanish with it.
    const plain = Array.from({ length: 60 }, (_, i) => server!.post('/v1/pets', { name: `plain-${i}`, categoryId: 2 }));
    const keyed = Array.from({ length: 60 }, (_, i) =>
      server!.post('/v1/pets', i % 2 ? rex : { ...rex, name: `other-${i}` }, { 'idempotency-key': 'taken' }),
    );
    const fresh = Array.from({ length: 20 }, (_, i) =>
      server!.post('/v1/pets', { name: `fresh-${i}`, categoryId: 3 }, { 'idempotency-key': `fresh-${i}` }),
    );
    const plainResponses = await Promise.all(plain);
    const keyedResponses = await Promise.all(keyed);
    const freshResponses = await Promise.all(fresh);
    expect(plainResponses.map((r) => r.status)).toEqual(Array(60).fill(201));
    expect(new Set(keyedResponses.map((r) => r.status))).toEqual(new Set([201, 422]));
    expect(freshResponses.map((r) => r.status)).toEqual(Array(20).fill(201));

    const acknowledged = [...(await Promise.all([...plainResponses, ...freshResponses].map(json)))];
    for (const pet of acknowledged) {
      expect(await json(server.request(`/v1/pets/${pet.id}`))).toEqual(pet);
    }
    expect(await server.database.prisma.pet.count()).toBe(1 + 60 + 20);
  });

  it('keys are scoped to the API key', async () => {
    server = await startTestServer();
    const mine = await json(server.post('/v1/pets', rex, { 'idempotency-key': 'shared' }));
    const theirs = await json(server.post('/v1/pets', rex, { 'idempotency-key': 'shared', authorization: `Bearer ${OTHER_API_KEY}` }));
    expect(theirs.id).not.toBe(mine.id);
    expect(await server.database.prisma.pet.count()).toBe(2);
  });

  it('keys expire: after the time-to-live the same key creates again', async () => {
    server = await startTestServer({ config: { idempotencyTtlMs: 200 } });
    const first = await json(server.post('/v1/pets', rex, { 'idempotency-key': 'short-lived' }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await json(server.post('/v1/pets', { ...rex, name: 'Other body is fine now' }, { 'idempotency-key': 'short-lived' }));
    expect(second.id).not.toBe(first.id);
  });

  it.each([
    ['too long', 'k'.repeat(256)],
    ['with a space', 'two words'],
    ['empty quotes', '""'],
  ])('a malformed key (%s) → 400, nothing created', async (_label, key) => {
    server = await startTestServer();
    await expectError(await server.post('/v1/pets', rex, { 'idempotency-key': key }), 400, 'BAD_REQUEST', /Idempotency-Key/);
    expect(await server.database.prisma.pet.count()).toBe(0);
  });

  it('accepts the draft’s quoted form as the same key', async () => {
    server = await startTestServer();
    const first = await json(server.post('/v1/pets', rex, { 'idempotency-key': 'abc' }));
    const quoted = await json(server.post('/v1/pets', rex, { 'idempotency-key': '"abc"' }));
    expect(quoted).toEqual(first);
  });

  it('works on the tRPC surface too', async () => {
    server = await startTestServer();
    const trpc = createTRPCClient<AppRouter>({
      links: [httpLink({ url: `${server.baseUrl}/trpc`, headers: { authorization: `Bearer ${API_KEY}`, 'idempotency-key': 'trpc-1' } })],
    });
    const first = await trpc.pets.create.mutate(rex);
    expect(await trpc.pets.create.mutate(rex)).toEqual(first);
    expect(await server.database.prisma.pet.count()).toBe(1);
  });
});

describe('across instances', () => {
  it('a retry that lands on another instance replays too', async () => {
    const shared = await createTestDatabase();
    await migrateDatabase(shared.migrationUrl);
    const instances = await Promise.all(
      [1, 2].map(async () => {
        const database = await openDatabase(parseConfig({ DATABASE_URL: shared.url }));
        const app = await buildApp({ config: TEST_CONFIG, database, logger: pino({ level: 'silent' }) });
        return { app, database };
      }),
    );
    const send = (index: number) =>
      instances[index]!.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'idempotency-key': 'cross' },
        payload: rex,
      });
    const first = await send(0);
    const second = await send(1);
    expect([first.statusCode, second.statusCode]).toEqual([201, 201]);
    expect(second.json()).toEqual(first.json());
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(await instances[0]!.database.prisma.pet.count()).toBe(1);
    for (const { app, database } of instances) {
      await app.close();
      await database.close();
    }
    await shared.drop();
  });
});
