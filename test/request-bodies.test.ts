// What is decided before a request's body is read (src/http/request-bodies.ts), on both surfaces:
// `100 Continue` only for a body the service will read (never before a refusal for want of a key),
// and a body in a content coding (gzip, deflate, br) refused with 415 before it is read, in the
// surface's shape, naming Content-Encoding. Raw sockets where the order of bytes on the wire matters.
import { connect } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, json, startTestServer, type TestServer } from './support/test-server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ provider: 'sqlite' });
});
afterAll(() => server?.close());

const KEY = `Authorization: Bearer ${API_KEY}`;
const BODY = '{"name":"Expected","categoryId":1}';

/**
 * A POST with `Expect: 100-continue` whose body is sent only once `100 Continue` arrives (as curl
 * and Python's http.client do). Resolves with everything received, when the connection closes.
 */
function expectContinue(path: string, headers: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(server.baseUrl).port), '127.0.0.1');
    let received = '';
    let sent = false;
    const bound = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the connection stayed open; received ${JSON.stringify(received)}`));
    }, 10_000);
    socket.on('connect', () =>
      socket.write(
        [`POST ${path} HTTP/1.1`, 'Host: localhost', 'Content-Type: application/json', 'Expect: 100-continue', ...headers]
          .concat(`Content-Length: ${BODY.length}`, 'Connection: close', '', '')
          .join('\r\n'),
      ),
    );
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('utf8');
      if (!sent && received.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
        sent = true;
        socket.write(BODY);
      }
    });
    socket.on('error', () => {}); // a reset is a close too
    socket.on('close', () => {
      clearTimeout(bound);
      resolve(received);
    });
  });
}

describe('Expect: 100-continue', () => {
  it.each([
    ['REST', '/v1/pets'],
    ['tRPC', '/trpc/pets.create'],
    ['a tRPC batch', '/trpc/pets.create,pets.create?batch=1'],
  ])('%s without a key: the 401 alone, no 100 Continue, and the connection closed', async (_surface, path) => {
    for (const headers of [[], ['Authorization: Bearer wrong-key-0123456789abcdef']]) {
      const received = await expectContinue(path, headers);
      expect(received).toMatch(/^HTTP\/1\.1 401 /);
      expect(received).not.toContain('100 Continue');
    }
  });

  it.each([
    ['REST', '/v1/pets', 201],
    ['tRPC', '/trpc/pets.create', 200],
  ])('%s with a key: 100 Continue, then the body is read and the pet created', async (_surface, path, status) => {
    const received = await expectContinue(path, [KEY]);
    expect(received).toMatch(new RegExp(`^HTTP/1\\.1 100 Continue\r\n\r\nHTTP/1\\.1 ${status} `));
    expect(received).toContain('"name":"Expected"');
  });
});

describe('a body in a content coding', () => {
  const CODINGS: Array<[string, (body: Buffer) => Buffer]> = [
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
    ['gzip, identity', gzipSync],
    ['GZIP', gzipSync],
  ];
  const petsNamed = async (name: string) =>
    ((await json(server.request('/v1/pets?limit=100'))) as Array<{ name: string }>).filter((pet) => pet.name === name).length;

  it.each(CODINGS)('Content-Encoding: %s: 415 before it is read, in each surface’s shape, and nothing created', async (coding, encode) => {
    const body = encode(Buffer.from('{"name":"Zipped","categoryId":1}'));
    const headers = { 'content-type': 'application/json', 'content-encoding': coding };
    const rest = await server.request('/v1/pets', { method: 'POST', headers, body });
    expect(rest.status).toBe(415);
    expect(rest.headers.get('accept-encoding')).toBe('identity');
    expect(rest.headers.get('x-request-id')).not.toBeNull();
    expect(await rest.json()).toEqual({
      code: 'UNSUPPORTED_MEDIA_TYPE',
      message: expect.stringContaining('Content-Encoding'),
      status: 415,
    });

    const trpc = await server.request('/trpc/pets.create', { method: 'POST', headers, body });
    expect(trpc.status).toBe(415);
    expect(trpc.headers.get('accept-encoding')).toBe('identity');
    expect(await trpc.json()).toEqual({
      error: {
        message: expect.stringContaining('Content-Encoding'),
        code: -32015,
        data: { code: 'UNSUPPORTED_MEDIA_TYPE', httpStatus: 415, zodError: null },
      },
    });
    expect(await petsNamed('Zipped')).toBe(0);
  });

  it('without a key the answer is the 401, on both surfaces: a caller without one learns nothing of the body rules', async () => {
    const headers = { authorization: '', 'content-type': 'application/json', 'content-encoding': 'gzip' };
    const body = gzipSync(Buffer.from(BODY));
    expect((await server.request('/v1/pets', { method: 'POST', headers, body })).status).toBe(401);
    expect((await server.request('/trpc/pets.create', { method: 'POST', headers, body })).status).toBe(401);
  });

  it('Content-Encoding: identity is a body as sent; on a GET (no body read) the header changes nothing', async () => {
    const identity = await server.post('/v1/pets', { name: 'Plain', categoryId: 1 }, { 'content-encoding': 'identity' });
    expect(identity.status).toBe(201);
    const trpc = await server.post('/trpc/pets.create', { name: 'Plain', categoryId: 1 }, { 'content-encoding': 'identity' });
    expect(trpc.status).toBe(200);
    const list = await server.request('/v1/pets?limit=1', { headers: { 'content-encoding': 'gzip' } });
    expect(list.status).toBe(200);
  });
});
