// HTTP semantics by the RFCs: the Bearer challenge on every 401 (RFC 9110 §11.6.1,
// RFC 6750 §3), HEAD like GET without a body (RFC 9110 §9.3.2), authentication before any input
// check, one percent-decoding rule for the whole path (RFC 3986 §6.2.2.2), empty segments 404, and an
// answer for a client that half-closes after its request (RFC 9112: that delimits no request).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startTestServer, type TestServer, json } from '../support/test-server.js';
import { expectError } from '../support/expect-error.js';
import { halfClosedRequest } from '../support/half-closed.js';

let server: TestServer;
let petId: number;
beforeAll(async () => {
  server = await startTestServer();
  petId = (await json(server.post('/v1/pets', { name: 'Rex', categoryId: 1 }))).id;
});
afterAll(() => server.close());

const NO_KEY = { authorization: '' };
const WRONG_KEY = { authorization: 'Bearer wrong-key-0123456789abcdef' };

describe('WWW-Authenticate on every 401', () => {
  const requests = (): Array<[string, string, RequestInit]> => [
    ['GET', '/v1/pets', {}],
    ['HEAD', '/v1/pets', { method: 'HEAD' }],
    ['POST', '/v1/pets', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"X","categoryId":1}' }],
    ['GET', `/v1/pets/${petId}`, {}],
    ['HEAD', `/v1/pets/${petId}`, { method: 'HEAD' }],
    ['GET', '/trpc/pets.list', {}],
    ['POST', '/trpc/pets.create', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"X","categoryId":1}' }],
    ['GET', `/trpc/pets.list,pets.get?batch=1&input=${encodeURIComponent(JSON.stringify({ 1: { petId } }))}`, {}],
  ];

  it.each(requests())('%s %s without a key: Bearer realm, no error', async (_method, path, init) => {
    const response = await server.request(path, { ...init, headers: { ...(init.headers as object), ...NO_KEY } });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="animal-store"');
  });

  it.each(requests())('%s %s with a wrong key: error="invalid_token"', async (_method, path, init) => {
    const response = await server.request(path, { ...init, headers: { ...(init.headers as object), ...WRONG_KEY } });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="animal-store", error="invalid_token"');
  });

  it('no challenge on answers that are not 401', async () => {
    expect((await server.request('/v1/pets')).headers.get('www-authenticate')).toBeNull();
    expect((await server.request('/v1/pets?limit=0')).headers.get('www-authenticate')).toBeNull();
  });
});

describe('HEAD answers like GET, without a body', () => {
  /** The headers a client reads, without those that differ per request. */
  function comparable(response: Response): Record<string, string> {
    const headers = Object.fromEntries(response.headers);
    for (const name of ['date', 'x-request-id', 'traceparent', 'ratelimit', 'connection', 'keep-alive']) delete headers[name];
    return headers;
  }

  it.each([
    ['a list', '/v1/pets?limit=5', {}],
    ['a pet', () => `/v1/pets/${petId}`, {}],
    ['a missing pet', '/v1/pets/987654', {}],
    ['a bad limit', '/v1/pets?limit=0', {}],
    ['a bad petId', '/v1/pets/abc', {}],
    ['no key', '/v1/pets', NO_KEY],
    ['no key, a pet', () => `/v1/pets/${petId}`, NO_KEY],
  ])('%s', async (_label, target, headers) => {
    const path = typeof target === 'function' ? target() : target;
    const get = await server.request(path, { headers });
    const getBody = await get.arrayBuffer();
    const head = await server.request(path, { method: 'HEAD', headers });
    expect(head.status).toBe(get.status);
    expect(comparable(head)).toEqual(comparable(get));
    expect(Number(head.headers.get('content-length'))).toBe(getBody.byteLength);
    expect((await head.arrayBuffer()).byteLength).toBe(0);
  });
});

describe('authentication before any input check', () => {
  it.each([
    ['a 150-digit petId', `/v1/pets/${'1'.repeat(150)}`],
    ['a non-integer petId', '/v1/pets/abc'],
    ['an encoded slash in petId', '/v1/pets/1%2F2'],
    ['an undecodable petId', '/v1/pets/%ZZ'],
    ['a petId that is not UTF-8', '/v1/pets/%E0%A4%A'],
    ['a bad limit', '/v1/pets?limit=abc'],
    ['a repeated limit', '/v1/pets?limit=1&limit=2'],
  ])('%s without a key → 401', async (_label, path) => {
    await expectError(await server.request(path, { headers: NO_KEY }), 401, 'UNAUTHORIZED');
  });

  it('a 150-digit petId with a key → 400', async () => {
    await expectError(await server.request(`/v1/pets/${'1'.repeat(150)}`), 400, 'BAD_REQUEST', /petId/);
  });
});

describe('one percent-decoding rule for the whole path', () => {
  it('an encoded unreserved character is that character, in any segment', async () => {
    const pet = await json(server.request(`/v1/pets/${petId}`));
    const encodedId = [...String(petId)].map((digit) => `%3${digit}`).join('');
    for (const path of [
      `/v1/pets/${encodedId}`,
      `/v1/%70ets/${petId}`,
      `/v1/p%65ts/${encodedId}`,
      `/v1/PETS/${petId}`.replace('PETS', '%70%65%74%73'),
    ]) {
      const response = await server.request(path);
      expect(response.status, path).toBe(200);
      expect(await response.json()).toEqual(pet);
    }
    expect((await server.request('/v1/%70ets?limit=1')).status).toBe(200);
  });

  it('a 405 is the same whichever way the path is written', async () => {
    for (const path of ['/v1/pets', '/v1/%70ets']) {
      const response = await server.request(path, { method: 'DELETE' });
      expect(response.headers.get('allow')).toBe('GET, HEAD, POST');
      await expectError(response, 405, 'METHOD_NOT_SUPPORTED');
    }
  });

  it('any other encoding stays as sent: never a separator, never part of an integer', async () => {
    await expectError(await server.request('/v1%2Fpets'), 404, 'NOT_FOUND');
    await expectError(await server.request('/v1/pets%2F1'), 404, 'NOT_FOUND');
    await expectError(await server.request('/v1/pets/%2531'), 400, 'BAD_REQUEST', /petId: must be an integer/);
    await expectError(await server.request('/v1/pets/1%2F'), 400, 'BAD_REQUEST', /petId: must be an integer/);
  });

  it('so does an encoding nothing can decode', async () => {
    await expectError(await server.request('/v1/pets/%ZZ'), 400, 'BAD_REQUEST', /petId: must be an integer/);
    await expectError(await server.request('/v1/pets/%E0%A4%A'), 400, 'BAD_REQUEST', /petId: must be an integer/);
    await expectError(await server.request('/v1/p%ZZets'), 404, 'NOT_FOUND');
    const response = await server.request('/v1/pets/%ZZ', { method: 'DELETE' });
    expect(response.headers.get('allow')).toBe('GET, HEAD');
  });
});

describe('empty path segments name no resource', () => {
  it.each(['/v1/pets//', '/v1//pets', '/v1/pets//1', '//v1/pets'])('GET %s → 404', async (path) => {
    await expectError(await server.request(path), 404, 'NOT_FOUND');
  });

  it('also without a key (404 is about the path, not the caller)', async () => {
    await expectError(await server.request('/v1/pets//', { headers: NO_KEY }), 404, 'NOT_FOUND');
  });

  it('a single trailing slash is still the resource', async () => {
    expect((await server.request('/v1/pets/')).status).toBe(200);
    expect((await server.request(`/v1/pets/${petId}/`)).status).toBe(200);
  });
});

describe('a client that half-closes its connection after the request', () => {
  const body = '{"name":"Half","categoryId":1}';
  const post = (path: string) =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${API_KEY}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n\r\n${body}`;
  const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${API_KEY}\r\n\r\n`;

  it.each([
    ['a REST create', post('/v1/pets'), /^HTTP\/1\.1 201 [^]*"name":"Half"/],
    ['a tRPC create', post('/trpc/pets.create'), /^HTTP\/1\.1 200 [^]*"result":\{"data":\{"id":\d+,"name":"Half"/],
    ['a REST list', get('/v1/pets?limit=1'), /^HTTP\/1\.1 200 [^]*\[\{"id":/],
  ])('gets its answer to %s, then the connection closes', async (_what, request, answer) => {
    expect(await halfClosedRequest(server.baseUrl, request)).toMatch(answer);
  });

  it('gets both answers of two pipelined requests', async () => {
    const text = await halfClosedRequest(server.baseUrl, post('/v1/pets') + get('/v1/pets?limit=1'));
    expect(text.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 201', 'HTTP/1.1 200']);
  });
});
