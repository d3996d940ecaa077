// Spec section 5: every operation, on both surfaces, needs `Authorization: Bearer <API key>`.
import { createTRPCClient, createTRPCUntypedClient, httpLink, TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/root-router.js';
import { API_KEY, OTHER_API_KEY, startTestServer, type TestServer, json } from '../support/test-server.js';
import { expectError } from '../support/expect-error.js';
import { restOperations, restPath, trpcProcedures } from '../support/operations.js';
import { BODY_METHODS } from '../../src/http/rest-plugin.js';

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

describe('REST: missing, malformed or wrong keys get 401 and no data', () => {
  // Every operation of the router. The key is checked before the input: a body is one a create would take.
  for (const operation of restOperations()) {
    it.each(badAuthorizations)(`${operation.operationId}: %s → 401`, async (_label, authorization) => {
      const hasBody = BODY_METHODS.has(operation.method);
      const headers: Record<string, string> = hasBody ? { 'content-type': 'application/json' } : {};
      if (authorization !== undefined) headers.authorization = authorization;
      const response = await fetch(server.baseUrl + restPath(operation, petId), {
        method: operation.method,
        headers,
        body: hasBody ? '{"name":"Mallory","categoryId":1}' : undefined,
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
  const links = (authorization?: string) => [
    httpLink({ url: `${server.baseUrl}/trpc`, headers: () => (authorization === undefined ? {} : { authorization }) }),
  ];
  const client = (authorization?: string) => createTRPCClient<AppRouter>({ links: links(authorization) });
  const untypedClient = (authorization?: string) => createTRPCUntypedClient({ links: links(authorization) });

  it.each(badAuthorizations)('%s → UNAUTHORIZED on every procedure', async (_label, authorization) => {
    const trpc = untypedClient(authorization);
    // Every procedure of the router. The key is checked before the input: queries get none, and
    // mutations the body a create would take (so that a create that ran would leave a Mallory).
    for (const { path, type } of trpcProcedures()) {
      const call = type === 'mutation' ? trpc.mutation(path, { name: 'Mallory', categoryId: 1 }) : trpc.query(path, undefined);
      const error = await call.then(
        () => null,
        (cause: unknown) => cause,
      );
      expect(error, path).toBeInstanceOf(TRPCClientError);
      expect((error as TRPCClientError<AppRouter>).data?.code, path).toBe('UNAUTHORIZED');
      expect((error as TRPCClientError<AppRouter>).data?.httpStatus, path).toBe(401);
    }
    expect(await server.database.prisma.pet.count({ where: { name: 'Mallory' } })).toBe(0);
  });

  it('a valid key works', async () => {
    expect(await client(`bearer ${API_KEY}`).pets.list.query()).toEqual(expect.any(Array));
  });
});
