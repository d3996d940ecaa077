// Spec section 5: every operation, on both surfaces, needs `Authorization: Bearer <API key>`.
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/root-router.js';
import { API_KEY, OTHER_API_KEY, startTestServer, type TestServer, json } from '../support/test-server.js';
import { expectError } from '../support/expect-error.js';

let server: TestServer;
let petId: number;
beforeAll(async () => {
  server = await startTestServer();
  petId = (await json(server.post('/v1/pets', { name: 'Rex', categoryId: 1 }))).id;
});
afterAll(() => server.close());

const badAuthorizations: Array<[string, string | undefined]> = [
  ['no header', undefined],
  ['empty header', ''],
  ['wrong key', 'Bearer wrong-key-0123456789abcdef'],
  ['key with a character changed', `Bearer ${API_KEY.slice(0, -1)}X`],
  ['key prefix only', `Bearer ${API_KEY.slice(0, 8)}`],
  ['key with a suffix', `Bearer ${API_KEY}x`],
  ['no scheme', API_KEY],
  ['Basic scheme', `Basic ${Buffer.from(`user:${API_KEY}`).toString('base64')}`],
  ['scheme without token', 'Bearer'],
  ['scheme and spaces only', 'Bearer    '],
  ['two tokens', `Bearer ${API_KEY} ${API_KEY}`],
  ['token in quotes', `Bearer "${API_KEY}"`],
  ['comma-joined tokens', `Bearer ${API_KEY},${OTHER_API_KEY}`],
];

const operations = () =>
  [
    ['listPets', () => ({ path: '/v1/pets', init: {} })],
    [
      'createPet',
      () => ({
        path: '/v1/pets',
        init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Mallory","categoryId":1}' },
      }),
    ],
    ['getPet', () => ({ path: `/v1/pets/${petId}`, init: {} })],
  ] as const;

describe('REST: missing, malformed or wrong keys get 401 and no data', () => {
  for (const [operation, build] of operations()) {
    it.each(badAuthorizations)(`${operation}: %s → 401`, async (_label, authorization) => {
      const { path, init } = build();
      const headers = new Headers((init as RequestInit).headers);
      if (authorization === undefined) headers.delete('authorization');
      const response = await fetch(server.baseUrl + path, {
        ...(init as RequestInit),
        headers: authorization === undefined ? headers : { ...Object.fromEntries(headers), authorization },
      });
      await expectError(response, 401, 'UNAUTHORIZED', /Bearer/);
    });
  }

  it('an unauthenticated create writes nothing', async () => {
    const before = await server.database.prisma.pet.count();
    await fetch(`${server.baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name":"Mallory","categoryId":1}',
    });
    expect(await server.database.prisma.pet.count()).toBe(before);
  });

  it('401 comes before input validation: a bad body without a key says nothing about the body', async () => {
    const response = await fetch(`${server.baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{not json',
    });
    await expectError(response, 401, 'UNAUTHORIZED');
  });
});

describe('REST: valid keys', () => {
  it.each(['Bearer', 'bearer', 'BEARER', 'bEaReR'])('scheme %s is accepted (case-insensitive)', async (scheme) => {
    const response = await server.request('/v1/pets', { headers: { authorization: `${scheme} ${API_KEY}` } });
    expect(response.status).toBe(200);
  });

  it('every key in API_KEYS works', async () => {
    for (const key of [API_KEY, OTHER_API_KEY]) {
      expect((await server.request('/v1/pets', { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    }
  });

  it('extra spaces between scheme and key are tolerated', async () => {
    expect((await server.request('/v1/pets', { headers: { authorization: `Bearer   ${API_KEY}` } })).status).toBe(200);
  });
});

describe('tRPC: the same rule, in tRPC error format', () => {
  const client = (authorization?: string) =>
    createTRPCClient<AppRouter>({
      links: [httpLink({ url: `${server.baseUrl}/trpc`, headers: () => (authorization === undefined ? {} : { authorization }) })],
    });

  it.each(badAuthorizations)('%s → UNAUTHORIZED on every procedure', async (_label, authorization) => {
    const trpc = client(authorization);
    for (const call of [
      () => trpc.pets.list.query({}),
      () => trpc.pets.get.query({ petId }),
      () => trpc.pets.create.mutate({ name: 'Mallory', categoryId: 1 }),
    ]) {
      const error = await call().then(
        () => null,
        (cause: unknown) => cause,
      );
      expect(error).toBeInstanceOf(TRPCClientError);
      expect((error as TRPCClientError<AppRouter>).data?.code).toBe('UNAUTHORIZED');
      expect((error as TRPCClientError<AppRouter>).data?.httpStatus).toBe(401);
    }
    expect(await server.database.prisma.pet.count({ where: { name: 'Mallory' } })).toBe(0);
  });

  it('a valid key works', async () => {
    expect(await client(`bearer ${API_KEY}`).pets.list.query()).toEqual(expect.any(Array));
  });
});
