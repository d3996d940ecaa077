// Requests without a valid identity are refused for the same reasons, with the same words, on both
// surfaces and by the procedures' middleware (src/api/refusals.ts decides once): 401, and 429 while
// an address is locked out for wrong keys (503 when the key could not be checked:
// test/reliability/database-faults.test.ts). Under /trpc a batch or a stream is refused as a whole,
// before its body is read, with one error that does not grow with the batch and that the real
// links of @trpc/client give to every call.
import { connect } from 'node:net';
import { createTRPCClient, httpBatchLink, httpBatchStreamLink, httpLink, TRPCClientError, type TRPCLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/root-router.js';
import { API_KEY, json, startTestServer, type TestServer } from '../support/test-server.js';

const NO_KEY_MESSAGE = 'A valid API key is required: send "Authorization: Bearer <key>".';
const WRONG_KEY = 'Bearer wrong-key-0123456789abcdef';

let server: TestServer;
let locking: TestServer;
beforeAll(async () => {
  [server, locking] = await Promise.all([
    startTestServer({ config: { requestTimeoutMs: 60_000 } }),
    startTestServer({ config: { authFailuresPerMinute: 2 } }),
  ]);
});
afterAll(() => Promise.all([server?.close(), locking?.close()]));

const q = (value: unknown) => encodeURIComponent(JSON.stringify(value));
const json_ = { 'content-type': 'application/json' };

/** One request of each way a call can arrive, on both surfaces, with `authorization` (undefined: none). */
function everyWay(target: TestServer, authorization: string | undefined) {
  const headers = (extra: Record<string, string> = {}): Record<string, string> => ({ authorization: authorization ?? '', ...extra });
  const request = (path: string, init: RequestInit = {}) => target.request(path, init);
  return {
    'REST list': () => request('/v1/pets', { headers: headers() }),
    'REST create': () => request('/v1/pets', { method: 'POST', headers: headers(json_), body: '{"name":"X","categoryId":1}' }),
    'REST get': () => request('/v1/pets/1', { headers: headers() }),
    'tRPC query': () => request(`/trpc/pets.get?input=${q({ petId: 1 })}`, { headers: headers() }),
    'tRPC mutation': () => request('/trpc/pets.create', { method: 'POST', headers: headers(json_), body: '{"name":"X","categoryId":1}' }),
    'tRPC batch of 1': () => request(`/trpc/pets.list?batch=1&input=${q({ 0: { limit: 1 } })}`, { headers: headers() }),
    'tRPC batch of 3': () => request('/trpc/pets.list,pets.get,pets.list?batch=1', { headers: headers() }),
    'tRPC stream': () => request('/trpc/pets.list,pets.list?batch=1', { headers: headers({ 'trpc-accept': 'application/jsonl' }) }),
    // multipart goes through tRPC's own handler to the procedures' middleware: the same decision.
    'tRPC via its own handler': () => {
      const form = new FormData();
      form.set('name', 'X');
      return request('/trpc/pets.create', { method: 'POST', headers: headers(), body: form });
    },
  };
}

/** The code and message of an error answer on either surface. */
async function refusalOf(response: Response): Promise<{ status: number; code: string; message: string }> {
  const body = await json(response);
  const error = Array.isArray(body) ? body[0].error : body.error;
  if (error) return { status: response.status, code: error.data.code, message: error.message };
  return { status: response.status, code: body.code, message: body.message };
}

describe('the same refusal, with the same words, on both surfaces and every way in', () => {
  it.each([
    ['no key', undefined, 'Bearer realm="animal-store"'],
    ['a wrong key', WRONG_KEY, 'Bearer realm="animal-store", error="invalid_token"'],
  ])('%s: 401 UNAUTHORIZED with the Bearer challenge', async (_label, authorization, challenge) => {
    for (const [way, send] of Object.entries(everyWay(server, authorization))) {
      const response = await send();
      expect(response.headers.get('www-authenticate'), way).toBe(challenge);
      expect(await refusalOf(response), way).toEqual({ status: 401, code: 'UNAUTHORIZED', message: NO_KEY_MESSAGE });
    }
  });

  it('an address locked out for wrong keys: 429 with Retry-After, the seconds said in the message', async () => {
    // Two wrong keys use up the address's budget (AUTH_FAILURES_PER_MINUTE=2); from then on keys
    // from it are not even checked.
    for (let i = 0; i < 2; i++) expect((await locking.request('/v1/pets', { headers: { authorization: WRONG_KEY } })).status).toBe(401);
    for (const [way, send] of Object.entries(everyWay(locking, WRONG_KEY))) {
      const response = await send();
      const retryAfter = response.headers.get('retry-after');
      expect(Number(retryAfter), way).toBeGreaterThanOrEqual(1);
      expect(response.headers.get('www-authenticate'), way).toBeNull();
      expect(await refusalOf(response), way).toEqual({
        status: 429,
        code: 'TOO_MANY_REQUESTS',
        message: `Too many failed authentication attempts from this address; retry after ${retryAfter} s.`,
      });
    }
    // The valid key is locked out too: the address may not try any key until the window ends.
    expect((await locking.request('/trpc/pets.list,pets.list?batch=1')).status).toBe(429);
  });
});

describe('a batch without a key is refused once', () => {
  const batchOf = (count: number, name: string) => `/trpc/${Array(count).fill(name).join(',')}?batch=1`;

  // As many calls as the request head's limit allows (16 KiB: src/http/request-head-limits.ts).
  it.each([
    ['GET, 1,600 queries', () => server.request(batchOf(1_600, 'pets.get'), { headers: { authorization: '' } })],
    [
      'POST, 1,200 creates',
      () => server.request(batchOf(1_200, 'pets.create'), { method: 'POST', headers: { authorization: '', ...json_ }, body: '{}' }),
    ],
    ['GET, 1,400 unknown names', () => server.request(batchOf(1_400, 'pets.nope'), { headers: { authorization: '' } })],
    ['PUT, 1,200 creates', () => server.request(batchOf(1_200, 'pets.create'), { method: 'PUT', headers: { authorization: '' } })],
  ])('%s: one small error, not one per call', async (_label, send) => {
    const response = await send();
    const text = await response.text();
    expect(response.status).toBe(401);
    expect(text.length).toBeLessThan(300);
    expect(JSON.parse(text)).toEqual({
      error: { message: NO_KEY_MESSAGE, code: -32001, data: { code: 'UNAUTHORIZED', httpStatus: 401, zodError: null } },
    });
  });

  it('before its body is read: a POST batch whose body never arrives is answered, then its connection closed', async () => {
    const port = Number(new URL(server.baseUrl).port);
    const answer = await new Promise<{ head: string; body: string }>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let received = '';
      // The test's own bound: a server that waited for the body (REQUEST_TIMEOUT_MS is 60 s here) fails it.
      const bound = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no answer while the body was outstanding; received ${JSON.stringify(received)}`));
      }, 10_000);
      socket.on('connect', () =>
        socket.write(
          `POST ${batchOf(200, 'pets.create')} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
            'Content-Length: 1000000\r\n\r\n{"0":{"name":"',
        ),
      );
      socket.on('data', (chunk) => (received += chunk.toString('latin1')));
      socket.on('error', () => {}); // a reset is a close too
      socket.on('close', () => {
        clearTimeout(bound);
        const [head = '', body = ''] = received.split('\r\n\r\n');
        resolve({ head, body });
      });
    });
    expect(answer.head).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer.head.toLowerCase()).toContain('connection: close');
    expect(JSON.parse(answer.body)).toMatchObject({ error: { data: { code: 'UNAUTHORIZED', httpStatus: 401 } } });
  });
});

describe('a request refused for want of a valid key ends its connection', () => {
  /** Two requests pipelined on one connection; the statuses answered before the server closed it. */
  function pipelined(request: string): Promise<number[]> {
    return new Promise((resolve, reject) => {
      const socket = connect(Number(new URL(server.baseUrl).port), '127.0.0.1');
      let received = '';
      const bound = setTimeout(() => {
        socket.destroy();
        reject(new Error(`the connection stayed open; received ${JSON.stringify(received)}`));
      }, 10_000);
      socket.on('connect', () => socket.write(request + request));
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
      socket.on('error', () => {}); // a reset is a close too
      socket.on('close', () => {
        clearTimeout(bound);
        resolve([...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1])));
      });
    });
  }
  /** A request's head and body; `authorization` is a header line, or '' for none. */
  const request = (line: string, authorization: string, headers: string[] = [], body = '') =>
    `${[line, 'Host: localhost', authorization, ...headers].filter((header) => header !== '').join('\r\n')}\r\n\r\n${body}`;
  const get = (path: string, authorization: string) => request(`GET ${path} HTTP/1.1`, authorization);
  const post = (path: string, authorization: string, type: string, body: string) =>
    request(`POST ${path} HTTP/1.1`, authorization, [`Content-Type: ${type}`, `Content-Length: ${body.length}`], body);
  const form = '--b\r\nContent-Disposition: form-data; name="name"\r\n\r\nX\r\n--b--\r\n';
  const ways = (authorization: string): Array<[string, string]> => [
    ['REST list', get('/v1/pets', authorization)],
    ['REST get', get('/v1/pets/1', authorization)],
    ['REST create', post('/v1/pets', authorization, 'application/json', '{"name":"X","categoryId":1}')],
    ['tRPC query', get(`/trpc/pets.get?input=${q({ petId: 1 })}`, authorization)],
    ['tRPC batch', get('/trpc/pets.list,pets.list?batch=1', authorization)],
    ['tRPC mutation', post('/trpc/pets.create', authorization, 'application/json', '{"name":"X","categoryId":1}')],
    ['tRPC via its own handler', post('/trpc/pets.create', authorization, 'multipart/form-data; boundary=b', form)],
  ];

  it.each([
    ['no key', ''],
    ['a wrong key', `Authorization: ${WRONG_KEY}`],
  ])('%s: one 401 on each way in, then the connection is closed (the pipelined second request is not answered)', async (_label, header) => {
    for (const [way, sent] of ways(header)) expect(await pipelined(sent), way).toEqual([401]);
  });

  it('with a valid key both pipelined requests are answered on the one connection', async () => {
    const request = `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${API_KEY}\r\n\r\n`;
    const closing = request.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n');
    const answered = await new Promise<number>((resolve) => {
      const socket = connect(Number(new URL(server.baseUrl).port), '127.0.0.1', () => socket.write(request + closing));
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
      socket.on('close', () => resolve(received.match(/HTTP\/1\.1 200 /g)?.length ?? 0));
    });
    expect(answered).toBe(2);
  });
});

describe('tRPC’s links give the one refusal to every call of the batch', () => {
  const links: Array<[string, (url: string, authorization: string) => TRPCLink<AppRouter>]> = [
    ['httpBatchLink', (url, authorization) => httpBatchLink({ url, headers: { authorization } })],
    ['httpBatchStreamLink', (url, authorization) => httpBatchStreamLink({ url, headers: { authorization } })],
    ['httpLink', (url, authorization) => httpLink({ url, headers: { authorization } })],
  ];

  it.each(links)('%s: every call rejects with UNAUTHORIZED, 401', async (_name, link) => {
    const client = createTRPCClient<AppRouter>({ links: [link(`${server.baseUrl}/trpc`, WRONG_KEY)] });
    // One batch of queries and one of mutations (the batching links group each kind).
    const outcomes = await Promise.allSettled([
      ...Array.from({ length: 30 }, (_, i) => client.pets.get.query({ petId: i + 1 })),
      ...Array.from({ length: 10 }, (_, i) => client.pets.list.query({ limit: i + 1 })),
      ...Array.from({ length: 20 }, (_, i) => client.pets.create.mutate({ name: `Keyless ${i}`, categoryId: 1 })),
    ]);
    expect(outcomes).toHaveLength(60);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      const error = (outcome as PromiseRejectedResult).reason as TRPCClientError<AppRouter>;
      expect(error).toBeInstanceOf(TRPCClientError);
      expect(error.message).toBe(NO_KEY_MESSAGE);
      expect(error.data).toMatchObject({ code: 'UNAUTHORIZED', httpStatus: 401 });
    }
    expect(await server.database.prisma.pet.count({ where: { name: { startsWith: 'Keyless' } } })).toBe(0);
  });
});
