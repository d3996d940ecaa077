// Abuse limits: requests per API key, counted on both surfaces, and failed
// authentications per client address; past either, 429 with Retry-After and the draft headers.
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import { afterEach, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/root-router.js';
import { API_KEY, OTHER_API_KEY, startTestServer, type TestServer } from '../support/test-server.js';
import { expectError } from '../support/expect-error.js';
import { FixedWindowLimiter } from '../../src/limits/fixed-window-limiter.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const trpcClient = (baseUrl: string, key: string) =>
  createTRPCClient<AppRouter>({ links: [httpLink({ url: `${baseUrl}/trpc`, headers: { authorization: `Bearer ${key}` } })] });

function parseRateLimit(header: string | null) {
  const match = /^"per-key";r=(\d+);t=(\d+)$/.exec(header ?? '');
  expect(match, `RateLimit: ${header}`).not.toBeNull();
  return { remaining: Number(match![1]), reset: Number(match![2]) };
}

describe('per API key', () => {
  it('announces the policy, counts down, then answers 429 with Retry-After', async () => {
    server = await startTestServer({ config: { rateLimitPerMinute: 5 } });
    const remaining: number[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await server.request('/v1/pets');
      expect(response.status).toBe(200);
      expect(response.headers.get('ratelimit-policy')).toBe('"per-key";q=5;w=60');
      remaining.push(parseRateLimit(response.headers.get('ratelimit')).remaining);
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0]);

    const refused = await server.request('/v1/pets');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(parseRateLimit(refused.headers.get('ratelimit'))).toEqual({ remaining: 0, reset: retryAfter });
    await expectError(refused, 429, 'TOO_MANY_REQUESTS', /Rate limit of 5 requests a minute/);
  });

  it('a refused create writes nothing', async () => {
    server = await startTestServer({ config: { rateLimitPerMinute: 1 } });
    expect((await server.post('/v1/pets', { name: 'One', categoryId: 1 })).status).toBe(201);
    await expectError(await server.post('/v1/pets', { name: 'Two', categoryId: 1 }), 429, 'TOO_MANY_REQUESTS');
    expect(await server.database.prisma.pet.count()).toBe(1);
  });

  it('a REST request with a valid key counts and carries the headers whatever its body: not JSON, too large, another type', async () => {
    server = await startTestServer({ config: { rateLimitPerMinute: 4, bodyLimitBytes: 1_024 } });
    const post = (body: string, type = 'application/json') =>
      fetch(`${server!.baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': type },
        body,
      });
    const answers = [
      await post('{not json'),
      await post(JSON.stringify({ name: 'x'.repeat(2_000), categoryId: 1 })),
      await post('name=x', 'text/plain'),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([400, 413, 415]);
    expect(answers.map((answer) => parseRateLimit(answer.headers.get('ratelimit')).remaining)).toEqual([3, 2, 1]);
    expect((await server.request('/v1/pets')).status).toBe(200);
    const refused = await post('{not json');
    await expectError(refused, 429, 'TOO_MANY_REQUESTS');
    // Refused before its body is read: the connection is not kept for a body no one will read.
    expect(refused.headers.get('connection')).toBe('close');
  });

  it('a tRPC call with a valid key counts and carries the headers when its body is not JSON, and is refused before its body past the limit', async () => {
    server = await startTestServer({ config: { rateLimitPerMinute: 2 } });
    const post = () =>
      fetch(`${server!.baseUrl}/trpc/pets.create`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: '{not json',
      });
    const answers = [await post(), await post()];
    expect(answers.map((answer) => answer.status)).toEqual([400, 400]);
    expect(answers.map((answer) => parseRateLimit(answer.headers.get('ratelimit')).remaining)).toEqual([1, 0]);
    const refused = await post();
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { data: { code: string } } }).error.data.code).toBe('TOO_MANY_REQUESTS');
    expect(refused.headers.get('connection')).toBe('close');
  });

  it("a tRPC batch whose calls are not all of its method's type counts every name at admission, and past the budget is refused whole before any call runs", async () => {
    server = await startTestServer({ config: { rateLimitPerMinute: 3 } });
    const mixed = await server.request('/trpc/pets.list,pets.create?batch=1');
    expect(mixed.status).toBe(400); // tRPC's "Cannot mix procedure types", before any call runs
    expect(parseRateLimit(mixed.headers.get('ratelimit')).remaining).toBe(1);
    // 2 calls do not fit in the 1 left: one 429 for the batch, before tRPC reads it.
    const refused = await server.post('/trpc/pets.create,pets.list?batch=1', { 0: { name: 'Rex', categoryId: 1 } });
    expect(refused.status).toBe(429);
    expect(parseRateLimit(refused.headers.get('ratelimit')).remaining).toBe(0);
    const body = (await refused.json()) as { error: { data: { code: string } } };
    expect(Array.isArray(body)).toBe(false);
    expect(body.error.data.code).toBe('TOO_MANY_REQUESTS');
  });

  it('a streamed tRPC batch counts at admission and carries the headers; past the budget it gets one error', async () => {
    server = await startTestServer({ config: { rateLimitPerMinute: 1 } });
    const streamed = () => server!.request('/trpc/pets.list?batch=1', { headers: { 'trpc-accept': 'application/jsonl' } });
    const first = await streamed();
    expect(first.status).toBe(200);
    expect(parseRateLimit(first.headers.get('ratelimit')).remaining).toBe(0);
    expect((await first.text()).trim().split('\n').length).toBeGreaterThan(1); // JSON lines
    const refused = await streamed();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).not.toBeNull();
    const body = (await refused.json()) as { error: { data: { code: string } } };
    expect(Array.isArray(body)).toBe(false);
    expect(body.error.data.code).toBe('TOO_MANY_REQUESTS');
  });

  it("a tRPC request tRPC refuses without running its procedure (a query by POST) still counts, and past the budget gets the call's 429", async () => {
    server = await startTestServer({ config: { rateLimitPerMinute: 1 } });
    const first = await server.post('/trpc/pets.list', '{}');
    expect(first.status).toBe(405);
    expect(parseRateLimit(first.headers.get('ratelimit')).remaining).toBe(0);
    for (const [path, batched] of [
      ['/trpc/pets.list', false],
      ['/trpc/pets.list?batch=1', true],
    ] as const) {
      const refused = await server.post(path, '{}');
      expect(refused.status).toBe(429);
      const body: unknown = await refused.json();
      expect(Array.isArray(body)).toBe(batched);
      expect(batched ? (body as unknown[])[0] : body).toMatchObject({
        error: { data: { code: 'TOO_MANY_REQUESTS', httpStatus: 429, path: 'pets.list' } },
      });
    }
  });

  it('a tRPC request naming an unknown procedure counts nothing', async () => {
    server = await startTestServer({ config: { rateLimitPerMinute: 5 } });
    for (const path of ['/trpc/pets.nope', '/trpc/pets.list,pets.nope?batch=1', '/trpc/pets.list,pets.list']) {
      const answer = await server.request(path);
      expect(answer.status).toBe(404);
      expect(answer.headers.get('ratelimit')).toBeNull();
    }
    expect(parseRateLimit((await server.request('/v1/pets')).headers.get('ratelimit')).remaining).toBe(4);
  });

  it('counts tRPC and REST calls against the same budget, and tRPC answers TOO_MANY_REQUESTS', async () => {
    server = await startTestServer({ config: { rateLimitPerMinute: 4 } });
    const trpc = trpcClient(server.baseUrl, API_KEY);
    await trpc.pets.list.query();
    await trpc.pets.list.query();
    expect((await server.request('/v1/pets')).status).toBe(200);
    expect((await server.request('/v1/pets')).status).toBe(200);
    const error = await trpc.pets.list.query().catch((cause: unknown) => cause);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect((error as TRPCClientError<AppRouter>).data).toMatchObject({ code: 'TOO_MANY_REQUESTS', httpStatus: 429 });
    expect((await server.request('/v1/pets')).status).toBe(429);
  });

  it('each key has its own budget', async () => {
    server = await startTestServer({ config: { rateLimitPerMinute: 2 } });
    await server.request('/v1/pets');
    await server.request('/v1/pets');
    expect((await server.request('/v1/pets')).status).toBe(429);
    expect((await server.request('/v1/pets', { headers: { authorization: `Bearer ${OTHER_API_KEY}` } })).status).toBe(200);
  });

  it('RATE_LIMIT_PER_MINUTE=0 turns the limit off', async () => {
    server = await startTestServer({ config: { rateLimitPerMinute: 0 } });
    for (let i = 0; i < 30; i++) expect((await server.request('/v1/pets')).status).toBe(200);
    expect((await server.request('/v1/pets')).headers.get('ratelimit')).toBeNull();
  });
});

describe('failed authentication per client address', () => {
  it('after the limit, 429 with Retry-After, on both surfaces, and even a valid key is not checked', async () => {
    server = await startTestServer({ config: { authFailuresPerMinute: 3 } });
    for (let i = 0; i < 3; i++) {
      await expectError(
        await server.request('/v1/pets', { headers: { authorization: `Bearer guess-${i}-aaaaaaaaaaaaaaaa` } }),
        401,
        'UNAUTHORIZED',
      );
    }
    const refused = await server.request('/v1/pets', { headers: { authorization: 'Bearer guess-4-aaaaaaaaaaaaaaaa' } });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    await expectError(refused, 429, 'TOO_MANY_REQUESTS', /failed authentication attempts/);

    // A right guess from this address now would tell the guesser nothing: it is not checked.
    await expectError(await server.request('/v1/pets'), 429, 'TOO_MANY_REQUESTS');

    const error = await trpcClient(server.baseUrl, API_KEY)
      .pets.list.query()
      .catch((cause: unknown) => cause);
    expect((error as TRPCClientError<AppRouter>).data).toMatchObject({ code: 'TOO_MANY_REQUESTS', httpStatus: 429 });
  });

  it('requests that send no key at all are not counted as guesses', async () => {
    server = await startTestServer({ config: { authFailuresPerMinute: 2 } });
    for (let i = 0; i < 10; i++) {
      await expectError(await server.request('/v1/pets', { headers: { authorization: '' } }), 401, 'UNAUTHORIZED');
    }
    expect((await server.request('/v1/pets')).status).toBe(200);
  });
});

describe('the fixed window (in memory)', () => {
  it("starts with a key's first request, counts it for windowMs, then starts afresh", () => {
    let now = 1_000_000;
    const limiter = new FixedWindowLimiter(2, 60_000, () => now);
    expect(limiter.take('k')).toMatchObject({ allowed: true, remaining: 1, resetSeconds: 60 });
    now += 45_000;
    expect(limiter.take('k')).toMatchObject({ allowed: true, remaining: 0, resetSeconds: 15 });
    expect(limiter.peek('k')).toMatchObject({ allowed: false });
    expect(limiter.take('k')).toMatchObject({ allowed: false, remaining: 0 });
    limiter.giveBack('k');
    limiter.giveBack('k');
    expect(limiter.peek('k')).toMatchObject({ allowed: true, remaining: 1 });
    now += 15_000; // the window is over
    expect(limiter.peek('k')).toMatchObject({ allowed: true, remaining: 2 });
    expect(limiter.take('k')).toMatchObject({ allowed: true, remaining: 1, resetSeconds: 60 });
  });

  it('past its memory bound it forgets the oldest windows, and still counts every new key', () => {
    let now = 0;
    const limiter = new FixedWindowLimiter(1, 60_000, () => now, 3);
    for (const key of ['a', 'b', 'c', 'd', 'e']) {
      now += 1;
      expect(limiter.take(key)).toMatchObject({ allowed: true });
    }
    expect(limiter.trackedKeys).toBe(3);
    // The newest are still counted (before: past the bound new keys went uncounted).
    expect(limiter.take('e')).toMatchObject({ allowed: false });
    expect(limiter.take('d')).toMatchObject({ allowed: false });
    // The oldest were forgotten.
    expect(limiter.take('a')).toMatchObject({ allowed: true });
  });
});
