// A tRPC batch costs the same small answer, whatever it names, when it cannot be served: over
// TRPC_MAX_BATCH_CALLS, naming unknown procedures, or from a key past its budget, it is refused
// once, before its body is read, in tRPC's shape (the keyless case: test/security/refusals.test.ts).
// A flood of such batches from several connections runs while a legitimate client reads its pets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, OTHER_API_KEY, json, startTestServer, type TestServer } from '../support/test-server.js';

let server: TestServer;
beforeAll(async () => {
  // OTHER_API_KEY's budget is small, to be used up; API_KEY's is the tests' large one.
  server = await startTestServer({ config: { rateLimitPerMinute: 1_000_000, trpcMaxBatchCalls: 60 } });
  await server.post('/v1/pets', { name: 'Rex', categoryId: 1 });
});
afterAll(() => server?.close());

const batchOf = (names: string[]) => `/trpc/${names.join(',')}?batch=1`;
const many = (count: number, name: string) => Array<string>(count).fill(name);

/** The one error of a request refused as a whole, and its size. */
async function wholeError(response: Response) {
  const text = await response.text();
  const body = JSON.parse(text) as { error?: { message: string; data: { code: string; httpStatus: number } } };
  return { status: response.status, bytes: text.length, isArray: Array.isArray(body), error: body.error };
}

describe('a batch from a known key that cannot be served is refused once', () => {
  it('over TRPC_MAX_BATCH_CALLS: one 400 in tRPC’s shape, as small for 1,600 calls as for 61', async () => {
    for (const count of [61, 1_600]) {
      const answer = await wholeError(await server.request(batchOf(many(count, 'pets.get'))));
      expect(answer).toMatchObject({ status: 400, isArray: false, error: { data: { code: 'BAD_REQUEST', httpStatus: 400 } } });
      expect(answer.error!.message).toBe('A batch may name at most 60 calls; split it into several requests.');
      expect(answer.bytes).toBeLessThan(300);
    }
    // Up to the cap, a batch is served call by call.
    const served = await server.request(batchOf(many(60, 'pets.get')) + `&input=${encodeURIComponent(JSON.stringify({}))}`);
    expect(Array.isArray(await json(served))).toBe(true);
  });

  it('unknown procedure names: one 404, not one per name', async () => {
    const answer = await wholeError(await server.request(batchOf(['pets.list', ...many(59, 'pets.nope')])));
    expect(answer).toMatchObject({ status: 404, isArray: false, error: { data: { code: 'NOT_FOUND', httpStatus: 404 } } });
    expect(answer.error!.message).toBe('No procedure found on path "pets.nope"');
    expect(answer.bytes).toBeLessThan(300);
  });

  it('a key past its budget: one 429 with Retry-After for a whole batch, not one per call', async () => {
    const limited = await startTestServer({ config: { rateLimitPerMinute: 3 } });
    try {
      const auth = { authorization: `Bearer ${OTHER_API_KEY}` };
      for (let i = 0; i < 3; i++) expect((await limited.request('/v1/pets', { headers: auth })).status).toBe(200);
      for (const init of [
        { headers: auth },
        { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' },
      ] as RequestInit[]) {
        const names = many(50, init.method === 'POST' ? 'pets.create' : 'pets.list');
        const response = await limited.request(batchOf(names), init);
        expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(response.headers.get('ratelimit')).toMatch(/^"per-key";r=0;t=\d+$/);
        const answer = await wholeError(response);
        expect(answer).toMatchObject({ status: 429, isArray: false, error: { data: { code: 'TOO_MANY_REQUESTS', httpStatus: 429 } } });
        expect(answer.bytes).toBeLessThan(300);
      }
      // The key's other budget is untouched: API_KEY still reads.
      expect((await limited.request('/trpc/pets.list,pets.list?batch=1')).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe("a batch's calls are counted against its key's budget together, once", () => {
  it('one decision for the whole batch: its RateLimit headers once, and a batch larger than what is left refused as a whole', async () => {
    const limited = await startTestServer({ config: { rateLimitPerMinute: 5 } });
    try {
      const auth = { authorization: `Bearer ${OTHER_API_KEY}` };
      const first = await limited.request(batchOf(many(3, 'pets.list')), { headers: auth });
      expect(first.status).toBe(200);
      expect(first.headers.get('ratelimit')).toMatch(/^"per-key";r=2;t=\d+$/);
      expect((await json(first)) as unknown[]).toHaveLength(3);
      // 3 more do not fit in the 2 left: no call runs, one 429 for the batch.
      const second = await limited.request(batchOf(many(3, 'pets.list')), { headers: auth });
      expect(second.headers.get('ratelimit')).toMatch(/^"per-key";r=0;t=\d+$/);
      expect(await wholeError(second)).toMatchObject({ status: 429, isArray: false, error: { data: { code: 'TOO_MANY_REQUESTS' } } });
    } finally {
      await limited.close();
    }
  });
});

describe('under a flood of such batches, a legitimate client keeps its answers', () => {
  it('4 connections sending 1,600-call and unknown-name batches; every legitimate read answered 200', async () => {
    let flooding = true;
    let floodAnswers = 0;
    const flood = async (path: string) => {
      while (flooding) {
        const response = await server.request(path);
        // One small error each: its size (and the work behind it) does not grow with the names.
        expect((await response.arrayBuffer()).byteLength).toBeLessThan(300);
        expect(response.status).toBeLessThan(500);
        floodAnswers++;
      }
    };
    const floods = [
      flood(batchOf(many(1_600, 'pets.get'))),
      flood(batchOf(many(1_600, 'pets.get'))),
      flood(batchOf(['pets.list', ...many(50, 'x')])),
      flood(batchOf(['pets.list', ...many(50, 'x')])),
    ];
    try {
      for (let i = 0; i < 50; i++) {
        const response = await server.request('/v1/pets?limit=1', { headers: { authorization: `Bearer ${API_KEY}` } });
        expect(response.status).toBe(200);
        expect(await json(response)).toHaveLength(1);
      }
    } finally {
      flooding = false;
      await Promise.all(floods);
    }
    expect(floodAnswers).toBeGreaterThan(0);
  });
});
