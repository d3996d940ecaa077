// Bytes in, bytes kept: a JSON body must be UTF-8 (RFC 8259). Bytes that are not (a Latin-1 `é`, a
// stray 0xFF, an encoded surrogate) are refused with 400 on both surfaces, in each surface's error
// shape, and nothing is stored with U+FFFD in their place. Bodies are sent as raw bytes over a real
// socket, as Python's `requests.post(data=<str>)` sends a Latin-1 string.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startTestServer, type TestServer } from './support/test-server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

/** `{"name":"Caf<bytes>","categoryId":1}` with `bytes` as they are. */
const bodyWith = (bytes: number[]) => Buffer.concat([Buffer.from('{"name":"Caf'), Buffer.from(bytes), Buffer.from('","categoryId":1}')]);

const NOT_UTF8: Array<[string, number[]]> = [
  ['Latin-1 é (\\xe9)', [0xe9]],
  ['\\xff', [0xff]],
  ['an encoded surrogate (\\xed\\xa0\\x80)', [0xed, 0xa0, 0x80]],
  ['an overlong / (\\xc0\\xaf)', [0xc0, 0xaf]],
  ['a truncated sequence (\\xe2\\x82)', [0xe2, 0x82]],
];

/** One HTTP/1.1 POST written to a socket as bytes; the status and the parsed JSON body of the answer. */
function postBytes(path: string, body: Buffer): Promise<{ status: number; contentType: string; body: unknown }> {
  const url = new URL(server.baseUrl);
  const head =
    `POST ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${API_KEY}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.end(Buffer.concat([Buffer.from(head), body])));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [headText = '', bodyText = ''] = text.split('\r\n\r\n', 2);
      const status = Number(headText.split(' ', 2)[1]);
      const contentType = /^content-type: (.*)$/im.exec(headText)?.[1] ?? '';
      resolve({ status, contentType, body: JSON.parse(bodyText) });
    });
  });
}

/** Every stored name, through REST. */
async function storedNames(): Promise<string[]> {
  const response = await server.request('/v1/pets?limit=100');
  return ((await response.json()) as Array<{ name: string }>).map((pet) => pet.name);
}

describe.each(NOT_UTF8)('a body with %s', (_label, bytes) => {
  it('REST: 400 in the envelope, nothing stored', async () => {
    const before = await storedNames();
    const answer = await postBytes('/v1/pets', bodyWith(bytes));
    expect(answer).toEqual({
      status: 400,
      contentType: 'application/json; charset=utf-8',
      body: { code: 'BAD_REQUEST', message: 'body: is not valid UTF-8', status: 400 },
    });
    expect(await storedNames()).toEqual(before);
  });

  it.each([
    ['a single call (answered directly)', '/trpc/pets.create', (body: Buffer) => body],
    [
      'a batch of two (answered by tRPC’s handler)',
      '/trpc/pets.create,pets.create?batch=1',
      (body: Buffer) => Buffer.concat([Buffer.from('{"0":'), body, Buffer.from(',"1":{"name":"Kept?","categoryId":1}}')]),
    ],
  ])('tRPC, %s: 400 in tRPC’s shape, nothing stored', async (_how, path, wrap) => {
    const before = await storedNames();
    const answer = await postBytes(path, wrap(bodyWith(bytes)));
    expect(answer.status).toBe(400);
    expect(answer.contentType).toBe('application/json');
    expect(answer.body).toMatchObject({
      error: { message: 'body: is not valid UTF-8', data: { code: 'BAD_REQUEST', httpStatus: 400 } },
    });
    expect(await storedNames()).toEqual(before);
  });
});

describe('UTF-8 bodies are kept byte for byte', () => {
  it.each([
    ['REST', '/v1/pets', (body: { name: string }) => body.name],
    ['tRPC', '/trpc/pets.create', (body: { result: { data: { name: string } } }) => body.result.data.name],
  ] as const)('%s: é, a 4-byte emoji and a BOM-led body', async (_surface, path, nameOf) => {
    const created = await postBytes(path, Buffer.from('{"name":"Café 🐕","categoryId":1}'));
    expect(created.status).toBe(path.startsWith('/v1') ? 201 : 200);
    expect(nameOf(created.body as never)).toBe('Café 🐕');
    expect(await storedNames()).toContain('Café 🐕');
    if (path.startsWith('/v1')) {
      // REST reads a body that starts with a byte order mark, as Fastify's own parser does.
      const withBom = await postBytes(path, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"name":"Bom","categoryId":1}')]));
      expect(withBom.status).toBe(201);
    }
    expect((await storedNames()).some((name) => name.includes('\ufffd'))).toBe(false);
  });
});
