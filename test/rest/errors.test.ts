// Spec section 7: one error envelope for every error REST answers with, including the ones the
// framework raises itself, never a stack trace, and the service keeps serving afterwards.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startTestServer, type TestServer } from '../support/test-server.js';
import { expectError } from '../support/expect-error.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

/** A raw request, for methods and headers fetch() will not send. */
function raw(method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<Response>((resolve, reject) => {
    const url = new URL(server.baseUrl + path);
    const req = httpRequest(
      { method, host: url.hostname, port: url.port, path, headers: { authorization: `Bearer ${API_KEY}`, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') responseHeaders.set(name, value);
          const text = Buffer.concat(chunks).toString();
          resolve(new Response(method === 'HEAD' ? null : text, { status: res.statusCode!, headers: responseHeaders }));
        });
      },
    );
    req.on('error', reject);
    if (body !== undefined) req.setHeader('content-length', Buffer.byteLength(body));
    req.end(body);
  });
}

describe('unknown routes and methods', () => {
  // (GET / points to the API reference: test/docs-page.test.ts.)
  it.each(['/v1/nothing', '/v1/pets/1/owner', '/v1/PETS', '/v1', '/v2/pets', '/pets'])('GET %s → 404', async (path) => {
    await expectError(await server.request(path), 404, 'NOT_FOUND');
  });

  it('POST / → 405 with Allow (/ is served for GET); POST /pets → 404', async () => {
    const answer = await raw('POST', '/', { 'content-type': 'application/json' }, '{}');
    expect(answer.headers.get('allow')).toBe('GET, HEAD');
    await expectError(answer, 405, 'METHOD_NOT_SUPPORTED');
    await expectError(await raw('POST', '/pets', { 'content-type': 'application/json' }, '{}'), 404, 'NOT_FOUND');
  });

  it.each([
    ['DELETE', '/v1/pets', 'GET, HEAD, POST'],
    ['PUT', '/v1/pets', 'GET, HEAD, POST'],
    ['PATCH', '/v1/pets/1', 'GET, HEAD'],
    ['DELETE', '/v1/pets/1', 'GET, HEAD'],
    ['POST', '/v1/pets/1', 'GET, HEAD'],
    ['OPTIONS', '/v1/pets', 'GET, HEAD, POST'],
  ])('%s %s → 405 with Allow: %s', async (method, path, allow) => {
    const response = await raw(method, path, { 'content-type': 'application/json' }, '{}');
    expect(response.headers.get('allow')).toBe(allow);
    await expectError(response, 405, 'METHOD_NOT_SUPPORTED', new RegExp(method));
  });
});

describe('internal failures', () => {
  it('a failing database gives 500 in the envelope with no internals, then the service recovers', async () => {
    const broken = await startTestServer();
    // Take the table away under the running service: every query now fails inside Prisma.
    await broken.database.prisma.$executeRawUnsafe('ALTER TABLE pets RENAME TO pets_away');
    const body = await expectError(await broken.request('/v1/pets'), 500, 'INTERNAL_SERVER_ERROR');
    expect(body.message).toBe('Internal server error');
    const trpc = await broken.request('/trpc/pets.list');
    const trpcText = await trpc.text();
    expect(trpc.status).toBe(500);
    expect(trpcText).not.toMatch(/pets_away|no such table|prisma|stack/i);

    await broken.database.prisma.$executeRawUnsafe('ALTER TABLE pets_away RENAME TO pets');
    expect((await broken.request('/v1/pets')).status).toBe(200);
    await broken.close();
  });
});

describe('the service keeps serving after bad input', () => {
  it('answers normally after a burst of every kind of bad request', async () => {
    await Promise.all([
      server.post('/v1/pets', '{"name":'),
      server.post('/v1/pets', '[]'),
      server.post('/v1/pets', 'x'.repeat(200 * 1024)),
      server.request('/v1/pets?limit=abc'),
      server.request('/v1/pets/abc'),
      raw('DELETE', '/v1/pets'),
      server.request('/v1/pets', { headers: { authorization: 'Bearer nope' } }),
    ]);
    const response = await server.post('/v1/pets', { name: 'Still here', categoryId: 1 });
    expect(response.status).toBe(201);
  });
});

describe('request ids', () => {
  it('returns the caller’s X-Request-Id, or a generated one', async () => {
    expect((await server.request('/v1/pets', { headers: { 'x-request-id': 'abc-123' } })).headers.get('x-request-id')).toBe('abc-123');
    expect((await server.request('/v1/pets')).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('requests Node’s HTTP parser refuses', () => {
  async function rawSocket(payload: string): Promise<string> {
    const { connect } = await import('node:net');
    const url = new URL(server.baseUrl);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => socket.end(payload));
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString()));
      socket.on('end', () => resolve(answer));
      socket.on('error', reject);
    });
  }

  it('a malformed request line gets 400 in the envelope', async () => {
    const answer = await rawSocket('GARBAGE\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({ code: 'BAD_REQUEST', message: expect.any(String), status: 400 });
  });

  it('oversized headers get 431 in the envelope', async () => {
    const answer = await rawSocket(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({
      code: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
      status: 431,
    });
  });
});
