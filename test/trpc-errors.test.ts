// Every answer under /trpc is in tRPC's error shape, read by the real links of
// @trpc/client as TRPCClientError with `data.code` and `data.httpStatus`: procedure errors, and
// what Fastify or Node refuse before tRPC runs (body too large, content type, headers too large).
import { createTRPCClient, httpBatchLink, httpBatchStreamLink, httpLink, TRPCClientError, type TRPCLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../src/api/root-router.js';
import { API_KEY, startTestServer, type TestServer } from './support/test-server.js';

let server: TestServer;
let limited: TestServer;
beforeAll(async () => {
  [server, limited] = await Promise.all([startTestServer(), startTestServer({ config: { rateLimitPerMinute: 2 } })]);
});
afterAll(() => Promise.all([server.close(), limited.close()]));

type Headers = Record<string, string>;
const linkKinds: Array<[string, (url: string, headers: Headers) => TRPCLink<AppRouter>]> = [
  ['httpLink', (url, headers) => httpLink({ url, headers })],
  ['httpBatchLink', (url, headers) => httpBatchLink({ url, headers })],
  ['httpBatchStreamLink', (url, headers) => httpBatchStreamLink({ url, headers })],
];

async function failure(call: Promise<unknown>): Promise<TRPCClientError<AppRouter>> {
  const error = await call.then(
    () => null,
    (cause: unknown) => cause,
  );
  expect(error).toBeInstanceOf(TRPCClientError);
  return error as TRPCClientError<AppRouter>;
}

describe.each(linkKinds)('%s reads every error', (_name, makeLink) => {
  const client = (target: TestServer = server, headers: Headers = { authorization: `Bearer ${API_KEY}` }) =>
    createTRPCClient<AppRouter>({ links: [makeLink(`${target.baseUrl}/trpc`, headers)] });

  it.each([
    ['no key', {}, 'Bearer realm="animal-store"'],
    ['a wrong key', { authorization: 'Bearer wrong-key-0123456789abcdef' }, 'Bearer realm="animal-store", error="invalid_token"'],
  ])('401 UNAUTHORIZED with %s', async (_label, headers, challenge) => {
    const error = await failure(client(server, headers).pets.list.query());
    expect(error.data).toMatchObject({ code: 'UNAUTHORIZED', httpStatus: 401 });
    // Refused before any call runs, a streamed batch too: a 401 with the challenge, not a stream.
    const response = error.meta!.response as Response;
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(challenge);
  });

  it('400 BAD_REQUEST for invalid input: the REST sentence as the message, the issues in data.zodError', async () => {
    const error = await failure(client().pets.create.mutate({ name: '', categoryId: 1 }));
    expect(error.data).toMatchObject({ code: 'BAD_REQUEST', httpStatus: 400 });
    expect(error.message).toBe('name: must not be empty');
    expect(error.data?.zodError).toEqual({ formErrors: [], fieldErrors: { name: expect.arrayContaining(['must not be empty']) } });

    const tooMany = await failure(client().pets.list.query({ limit: 500 }));
    expect(tooMany.message).toBe('limit: must be at most 100');
    expect(tooMany.data?.zodError?.fieldErrors).toEqual({ limit: ['must be at most 100'] });
  });

  it('every other error has data.zodError null', async () => {
    const error = await failure(client().pets.get.query({ petId: 987_654 }));
    expect(error.data?.zodError).toBeNull();
  });

  it('404 NOT_FOUND for an unknown id', async () => {
    const error = await failure(client().pets.get.query({ petId: 987_654 }));
    expect(error.data).toMatchObject({ code: 'NOT_FOUND', httpStatus: 404 });
  });

  it('413 PAYLOAD_TOO_LARGE for a body over the limit (refused by Fastify)', async () => {
    const error = await failure(client().pets.create.mutate({ name: 'x'.repeat(70_000), categoryId: 1 }));
    expect(error.data).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', httpStatus: 413 });
  });

  it('415 UNSUPPORTED_MEDIA_TYPE for a body that is not JSON (refused by Fastify)', async () => {
    const xml = client(server, { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/xml' });
    const error = await failure(xml.pets.create.mutate({ name: 'Rex', categoryId: 1 }));
    expect(error.data).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', httpStatus: 415 });
  });

  it('431 for headers too large (refused by Node), as BAD_REQUEST with the real status', async () => {
    const big = client(server, { authorization: `Bearer ${API_KEY}`, 'x-padding': 'a'.repeat(20_000) });
    const error = await failure(big.pets.list.query());
    expect(error.data).toMatchObject({ code: 'BAD_REQUEST', httpStatus: 431 });
  });

  it('429 TOO_MANY_REQUESTS past the per-key limit', async () => {
    const key = { authorization: `Bearer ${API_KEY}` };
    const results = await Promise.allSettled([0, 1, 2, 3].map(() => client(limited, key).pets.list.query()));
    const refused = results.filter((result) => result.status === 'rejected').map((result) => result.reason);
    expect(refused.length).toBeGreaterThanOrEqual(2);
    for (const error of refused) {
      expect(error).toBeInstanceOf(TRPCClientError);
      expect((error as TRPCClientError<AppRouter>).data).toMatchObject({ code: 'TOO_MANY_REQUESTS', httpStatus: 429 });
    }
  });
});

describe('a batch mixing successes and failures', () => {
  it.each(linkKinds.slice(1))('%s: each call gets its own result or error', async (_name, makeLink) => {
    const client = createTRPCClient<AppRouter>({ links: [makeLink(`${server.baseUrl}/trpc`, { authorization: `Bearer ${API_KEY}` })] });
    const pet = await client.pets.create.mutate({ name: 'Mixed', categoryId: 4 });
    const [found, missing, invalid, listed] = await Promise.allSettled([
      client.pets.get.query({ petId: pet.id }),
      client.pets.get.query({ petId: 987_655 }),
      client.pets.list.query({ limit: 0 }),
      client.pets.list.query({ limit: 1 }),
    ]);
    expect(found).toEqual({ status: 'fulfilled', value: pet });
    expect(((missing as PromiseRejectedResult).reason as TRPCClientError<AppRouter>).data).toMatchObject({
      code: 'NOT_FOUND',
      httpStatus: 404,
    });
    expect(((invalid as PromiseRejectedResult).reason as TRPCClientError<AppRouter>).data).toMatchObject({
      code: 'BAD_REQUEST',
      httpStatus: 400,
    });
    expect(listed).toMatchObject({ status: 'fulfilled', value: [expect.objectContaining({ id: expect.any(Number) })] });
  });
});

describe('invalid input reads the same on both surfaces', () => {
  it.each([
    ['a limit over 100', { limit: 500 }, '?limit=500'],
    ['a limit of 0 and an unknown status', { limit: 0, status: 'lost' }, '?limit=0&status=lost'],
  ])('%s: the tRPC message is the REST envelope’s message', async (_label, input, query) => {
    const headers = { authorization: `Bearer ${API_KEY}` };
    const trpc = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${server.baseUrl}/trpc`, headers })] });
    const error = await failure(trpc.pets.list.query(input as never));
    const rest = (await (await server.request(`/v1/pets${query}`, { headers })).json()) as { message: string };
    expect(error.message).toBe(rest.message);
    expect(error.message).not.toMatch(/[[{\n]/);
    // One entry per field named in the sentence.
    expect(Object.keys(error.data?.zodError?.fieldErrors ?? {}).sort()).toEqual(Object.keys(input).sort());
  });
});

describe('raw requests under /trpc that never reach a procedure', () => {
  /** Parses a tRPC error body and checks its shape: { error: { message, code, data: { code, httpStatus } } }. */
  async function expectTrpcError(response: Response, status: number, code: string) {
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toBe('application/json');
    const body = (await response.json()) as { error: { message: string; code: number; data: { code: string; httpStatus: number } } };
    expect(body.error).toMatchObject({ message: expect.any(String), code: expect.any(Number), data: { code, httpStatus: status } });
  }

  it.each([
    ['no procedure segment', '/trpc', 404, 'NOT_FOUND'],
    ['two segments', '/trpc/pets/list', 404, 'NOT_FOUND'],
    // tRPC's handler refuses these itself ("Invalid URL-encoding in path").
    ['a malformed percent-encoding in the path', '/trpc/pets.li%E0%A4%At', 400, 'BAD_REQUEST'],
    ['an undecodable byte in the path', '/trpc/pets.list%ZZ', 400, 'BAD_REQUEST'],
  ])('%s → %i in tRPC’s shape', async (_label, path, status, code) => {
    await expectTrpcError(await server.request(path), status, code);
  });

  it('a body over the limit and a content type with no parser', async () => {
    const post = (headers: Headers, body: string) => server.request('/trpc/pets.create', { method: 'POST', headers, body });
    await expectTrpcError(await post({ 'content-type': 'application/json' }, 'x'.repeat(70_000)), 413, 'PAYLOAD_TOO_LARGE');
    await expectTrpcError(await post({ 'content-type': 'application/xml' }, '<pet/>'), 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('a request Node’s parser refuses, by the path in its request line', async () => {
    const { connect } = await import('node:net');
    const url = new URL(server.baseUrl);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () =>
        socket.end(`GET /trpc/pets.list HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
      );
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({
      error: { data: { code: 'BAD_REQUEST', httpStatus: 431 } },
    });
  });
});
