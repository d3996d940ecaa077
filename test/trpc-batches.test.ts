// tRPC batches at any size a client sends: the real links of @trpc/client, unconfigured,
// and the project's createClient, with 1, 12, 60 and 200 concurrent calls of every kind (queries
// and mutations, successes and errors), each answered with its own result or error.
import { createTRPCClient, httpBatchLink, httpBatchStreamLink, httpLink, TRPCClientError, type TRPCLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../src/api/root-router.js';
import { createClient } from '../client/src/index.js';
import { CLIENT_MAX_BATCH_ITEMS, CLIENT_MAX_URL_LENGTH, MAX_PARAM_LENGTH } from '../src/http/request-head-limits.js';
import { API_KEY, startTestServer, TEST_CONFIG, type TestServer } from './support/test-server.js';

let server: TestServer;
let existing: { id: number; name: string; categoryId: number; status: string };
beforeAll(async () => {
  server = await startTestServer();
  existing = (await (await server.post('/v1/pets', { name: 'Anchor', categoryId: 9 })).json()) as typeof existing;
});
afterAll(() => server.close());

type Client = ReturnType<typeof createTRPCClient<AppRouter>>;

/** The links' own batches stay within the server's TRPC_MAX_BATCH_CALLS, as tRPC's docs advise (maxItems). */
const maxItems = TEST_CONFIG.trpcMaxBatchCalls;
const links: Array<[string, (url: string) => TRPCLink<AppRouter>]> = [
  ['httpLink', (url) => httpLink({ url, headers: { authorization: `Bearer ${API_KEY}` } })],
  ['httpBatchLink', (url) => httpBatchLink({ url, maxItems, headers: { authorization: `Bearer ${API_KEY}` } })],
  ['httpBatchStreamLink', (url) => httpBatchStreamLink({ url, maxItems, headers: { authorization: `Bearer ${API_KEY}` } })],
];

const clients = (): Array<[string, () => Client]> => [
  ...links.map(([name, link]): [string, () => Client] => [
    name,
    () => createTRPCClient<AppRouter>({ links: [link(`${server.baseUrl}/trpc`)] }),
  ]),
  ['createClient', () => createClient(server.baseUrl, API_KEY)],
];

/** What call `i` of a run must produce: a value check, or the tRPC error code it must fail with. */
type Expectation = { ok: (value: unknown) => void } | { code: string };

/** Call `i` of a mixed run: five kinds in turn, queries and mutations, successes and errors. */
function call(client: Client, run: string, i: number): [Promise<unknown>, Expectation] {
  switch (i % 5) {
    case 0: {
      const name = `${run}-${i}`;
      return [
        client.pets.create.mutate({ name, categoryId: i + 1 }),
        { ok: (pet) => expect(pet).toEqual({ id: expect.any(Number), name, categoryId: i + 1, status: 'available' }) },
      ];
    }
    case 1:
      return [client.pets.get.query({ petId: existing.id }), { ok: (pet) => expect(pet).toEqual(existing) }];
    case 2:
      return [client.pets.get.query({ petId: 1_000_000_000 + i }), { code: 'NOT_FOUND' }];
    case 3: {
      const limit = 1 + (i % 3);
      return [
        client.pets.list.query({ limit }),
        {
          ok: (pets) => {
            expect(pets).toBeInstanceOf(Array);
            expect((pets as unknown[]).length).toBeGreaterThanOrEqual(1); // the anchor pet at least
            expect((pets as unknown[]).length).toBeLessThanOrEqual(limit);
          },
        },
      ];
    }
    default:
      return [client.pets.create.mutate({ name: '', categoryId: i }), { code: 'BAD_REQUEST' }];
  }
}

describe.each(clients())('%s', (_name, makeClient) => {
  it.each([12, 60, 200])('%i concurrent pets.get calls, one batch of queries where the link batches', async (count) => {
    const client = makeClient();
    const pets = await Promise.all(Array.from({ length: count }, () => client.pets.get.query({ petId: existing.id })));
    expect(pets).toEqual(Array(count).fill(existing));
  });

  it.each([1, 12, 60, 200])('%i concurrent mixed calls each get their own answer', async (count) => {
    const client = makeClient();
    const run = `${_name}-${count}`;
    const calls = Array.from({ length: count }, (_, i) => call(client, run, i));
    const settled = await Promise.allSettled(calls.map(([promise]) => promise));
    settled.forEach((outcome, i) => {
      const expectation = calls[i]![1];
      if ('code' in expectation) {
        expect(outcome.status, `call ${i}`).toBe('rejected');
        const error = (outcome as PromiseRejectedResult).reason;
        expect(error, `call ${i}`).toBeInstanceOf(TRPCClientError);
        expect((error as TRPCClientError<AppRouter>).data?.code, `call ${i}: ${error}`).toBe(expectation.code);
      } else {
        expect(outcome.status, `call ${i}: ${(outcome as PromiseRejectedResult).reason}`).toBe('fulfilled');
        expectation.ok((outcome as PromiseFulfilledResult<unknown>).value);
      }
    });
    // Each create happened exactly once.
    const created = await server.database.prisma.pet.count({ where: { name: { startsWith: `${run}-` } } });
    expect(created).toBe(Math.ceil(count / 5));
  });
});

describe('createClient splits what one request could not carry', () => {
  it('1,000 concurrent queries with long inputs all succeed, in requests within the limits', async () => {
    const urls: string[] = [];
    const counting: typeof fetch = (input, init) => {
      urls.push(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      return fetch(input, init);
    };
    const client = createTRPCClient<AppRouter>({
      links: [
        httpBatchLink({
          url: `${server.baseUrl}/trpc`,
          headers: { authorization: `Bearer ${API_KEY}` },
          maxURLLength: CLIENT_MAX_URL_LENGTH,
          maxItems: CLIENT_MAX_BATCH_ITEMS,
          fetch: counting,
        }),
      ],
    });
    // The same options createClient passes (compared below), with a fetch that records each URL.
    const results = await Promise.all(Array.from({ length: 1_000 }, () => client.pets.get.query({ petId: existing.id })));
    expect(results.every((pet) => pet.id === existing.id)).toBe(true);
    expect(urls.length).toBeGreaterThanOrEqual(1_000 / CLIENT_MAX_BATCH_ITEMS);
    for (const url of urls) expect(url.length).toBeLessThanOrEqual(CLIENT_MAX_URL_LENGTH);
    expect(CLIENT_MAX_URL_LENGTH).toBeLessThan(MAX_PARAM_LENGTH);

    const viaCreateClient = createClient(server.baseUrl, API_KEY);
    const again = await Promise.all(Array.from({ length: 1_000 }, () => viaCreateClient.pets.get.query({ petId: existing.id })));
    expect(again).toHaveLength(1_000);
  });

  it('a batch too long for any server is refused in tRPC’s shape, not with an unreadable answer', async () => {
    // An unconfigured httpBatchLink puts 3,000 calls in one URL, past the request-head limit.
    const client = createTRPCClient<AppRouter>({
      links: [httpBatchLink({ url: `${server.baseUrl}/trpc`, headers: { authorization: `Bearer ${API_KEY}` } })],
    });
    const outcomes = await Promise.allSettled(Array.from({ length: 3_000 }, () => client.pets.get.query({ petId: existing.id })));
    const error = (outcomes[0] as PromiseRejectedResult).reason as TRPCClientError<AppRouter>;
    expect(error).toBeInstanceOf(TRPCClientError);
    expect(error.data?.httpStatus).toBe(431);
    expect(error.data?.code).toBe('BAD_REQUEST');
  });
});
