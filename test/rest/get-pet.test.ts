// Spec 4.3 (GET /pets/{petId}, deprecated) and section 9.3 (its deprecation).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, json } from '../support/test-server.js';
import { expectError } from '../support/expect-error.js';

let server: TestServer;
let rex: { id: number };
beforeAll(async () => {
  server = await startTestServer();
  rex = await json(server.post('/v1/pets', { name: 'Rex', categoryId: 4, status: 'sold' }));
});
afterAll(() => server.close());

function expectDeprecationHeaders(response: Response) {
  expect(response.headers.get('deprecation')).toBe(`@${Date.UTC(2026, 10, 21) / 1000}`);
  expect(response.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
  expect(response.headers.get('link')).toMatch(/^<[^>]+>; rel="deprecation"$/);
}

describe('GET /v1/pets/{petId} (getPet, deprecated)', () => {
  it('answers 200 with the pet', async () => {
    const response = await server.request(`/v1/pets/${rex.id}`);
    expect(response.status).toBe(200);
    expect(await json(response)).toEqual({ id: rex.id, name: 'Rex', categoryId: 4, status: 'sold' });
  });

  it('answers 404 in the envelope for an id no pet has', async () => {
    await expectError(await server.request('/v1/pets/999999'), 404, 'NOT_FOUND', /999999/);
  });

  it.each(['abc', '1.5', '0x1', '1e3', '%2531', '1%20', '%2B1', '-', ' 1'])('petId=%s is not an integer → 400', async (petId) => {
    await expectError(await server.request(`/v1/pets/${petId}`), 400, 'BAD_REQUEST', /petId: must be an integer/);
  });

  it.each([
    ['0', /at least 1/],
    ['-1', /at least 1/],
    ['9007199254740992', /at most/],
    ['99999999999999999999', /at most/],
  ])('petId=%s is out of range → 400', async (petId, message) => {
    await expectError(await server.request(`/v1/pets/${petId}`), 400, 'BAD_REQUEST', message);
  });

  it('carries Deprecation, Sunset and Link on every response: 200, 404, 400 and 401', async () => {
    expectDeprecationHeaders(await server.request(`/v1/pets/${rex.id}`));
    expectDeprecationHeaders(await server.request('/v1/pets/424242'));
    expectDeprecationHeaders(await server.request('/v1/pets/abc'));
    expectDeprecationHeaders(await server.request(`/v1/pets/${rex.id}`, { headers: { authorization: '' } }));
  });

  it('the other operations carry no deprecation headers', async () => {
    const response = await server.request('/v1/pets');
    expect(response.headers.get('deprecation')).toBeNull();
    expect(response.headers.get('sunset')).toBeNull();
  });

  it('Link points at documentation the server serves', async () => {
    const link = (await server.request(`/v1/pets/${rex.id}`)).headers.get('link')!;
    const target = /^<([^>#]+)/.exec(link)![1]!;
    const response = await fetch(server.baseUrl + target);
    expect(response.status).toBe(200);
  });
});
