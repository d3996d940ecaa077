// No request with a missing, wrong, malformed or revoked key ever gets data, on either surface: a
// property over generated credentials and every operation.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeyStore } from '../../src/auth/api-key-store.js';
import { API_KEY, OTHER_API_KEY, startTestServer, type TestServer } from '../support/test-server.js';

let server: TestServer;
let revokedKey: string;
let petId: number;

beforeAll(async () => {
  server = await startTestServer();
  const keys = createApiKeyStore(server.database.prisma);
  revokedKey = (await keys.create('revoked-one')).key;
  expect((await server.request('/v1/pets', { headers: { authorization: `Bearer ${revokedKey}` } })).status).toBe(200);
  await keys.revoke('revoked-one');
  petId = ((await (await server.post('/v1/pets', { name: 'Secret', categoryId: 42 })).json()) as { id: number }).id;
});
afterAll(() => server.close());

const valid = [API_KEY, OTHER_API_KEY];

/** Near misses of real keys: one character changed, cut, extended, re-cased; and plain junk. */
const badToken = fc.oneof(
  fc.constant(() => revokedKey),
  fc.tuple(fc.constantFrom(...valid), fc.nat(), fc.constantFrom(...'aZ09-_.~+/'.split(''))).map(([key, at, c]) => () => {
    const i = at % key.length;
    const changed = key.slice(0, i) + c + key.slice(i + 1);
    return changed === key ? `${key}${c}` : changed;
  }),
  fc.tuple(fc.constantFrom(...valid), fc.nat()).map(
    ([key, n]) =>
      () =>
        key.slice(0, n % key.length),
  ),
  fc.constantFrom(...valid).map((key) => () => key.toUpperCase()),
  fc.constantFrom(...valid).map((key) => () => `${key}=`),
  fc.string({ unit: fc.constantFrom(...'abcdefXYZ0123456789-._~+/='.split('')), maxLength: 64 }).map((t) => () => t),
);
const authorization = fc.oneof(
  badToken.map((token) => () => `Bearer ${token()}`),
  badToken.map((token) => () => `bearer   ${token()}`),
  badToken.map((token) => () => token()),
  fc.constantFrom(...valid).map((key) => () => `Basic ${key}`),
  fc.constantFrom(...valid).map((key) => () => `Bearer ${key} extra`),
  fc.constantFrom(...valid).map((key) => () => `Bearer${key}`),
  fc.constant(() => ''),
  fc.constant(() => undefined),
);
const operation = fc.constantFrom(
  { label: 'REST listPets', path: () => '/v1/pets?limit=100', init: {} },
  { label: 'REST getPet', path: () => `/v1/pets/${petId}`, init: {} },
  {
    label: 'REST createPet',
    path: () => '/v1/pets',
    init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Intruder","categoryId":1}' },
  },
  { label: 'tRPC pets.list', path: () => '/trpc/pets.list', init: {} },
  { label: 'tRPC pets.get', path: () => `/trpc/pets.get?input=${encodeURIComponent(JSON.stringify({ petId }))}`, init: {} },
  {
    label: 'tRPC batch',
    path: () => `/trpc/pets.list,pets.get?batch=1&input=${encodeURIComponent(JSON.stringify({ 0: {}, 1: { petId } }))}`,
    init: {},
  },
  {
    label: 'tRPC pets.create',
    path: () => '/trpc/pets.create',
    init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Intruder","categoryId":1}' },
  },
);

describe('without a valid key', () => {
  it('no generated credential gets data from any operation on either surface', async () => {
    await fc.assert(
      fc.asyncProperty(authorization, operation, async (makeAuthorization, op) => {
        const header = makeAuthorization();
        const headers = new Headers((op.init as RequestInit).headers);
        if (header === undefined) headers.delete('authorization');
        else headers.set('authorization', header);
        const response = await fetch(server.baseUrl + op.path(), { ...(op.init as RequestInit), headers });
        const text = await response.text();
        expect(response.status, `${op.label} with ${JSON.stringify(header)}`).toBe(401);
        expect(text).not.toContain('Secret');
        expect(text).not.toContain('"categoryId"');
      }),
      { numRuns: 600 },
    );
    expect(await server.database.prisma.pet.count({ where: { name: 'Intruder' } })).toBe(0);
  });
});
