// The typed clients of the client package (client/src), from its source, used as client/README.md uses
// them against a running server: createClient (tRPC, with its retries and Idempotency-Keys) and
// createRestClient (openapi-fetch on the committed REST types, client/src/rest-api.ts, which must
// match the served document). The package as an app installs it: test/client-package.test.ts.
// The `@ts-expect-error` lines are checked by `tsc --noEmit` (the first step of `npm test`).
import { readFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { TRPCClientError } from '@trpc/client';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  createClient,
  createRestClient,
  type AnimalStoreClient,
  type AnimalStoreRestClient,
  type RestComponents,
  type RestPaths,
  type RouterOutputs,
} from '../client/src/index.js';
import { generateRestApiTypes, REST_API_TYPES_FILE } from '../src/cli/rest-api-types.js';
import { startFaultyProxy, type FaultyProxy } from './support/faulty-proxy.js';
import { API_KEY, json, startTestServer, type TestServer } from './support/test-server.js';

type Pet = RestComponents['schemas']['Pet'];
type ErrorBody = RestComponents['schemas']['Error'];

let server: TestServer;
let trpc: AnimalStoreClient;
let rest: AnimalStoreRestClient;
beforeAll(async () => {
  server = await startTestServer();
  trpc = createClient(server.baseUrl, API_KEY);
  rest = createRestClient(server.baseUrl, API_KEY);
});
afterAll(() => server.close());

describe('createClient (tRPC, for TypeScript apps)', () => {
  it('creates, lists and gets pets with typed results', async () => {
    const rex = await trpc.pets.create.mutate({ name: 'Rex', categoryId: 3 });
    expectTypeOf(rex).toEqualTypeOf<RouterOutputs['pets']['create']>();
    expectTypeOf(rex).toEqualTypeOf<Pet>(); // the same record on both surfaces
    expect(rex).toEqual({ id: expect.any(Number), name: 'Rex', categoryId: 3, status: 'available' });

    expect(await trpc.pets.list.query({ status: 'available', limit: 5 })).toContainEqual(rex);
    expect(await trpc.pets.get.query({ petId: rex.id })).toEqual(rex);
  });

  it('sends a batch of any size: 200 creates, then 200 gets, and a failing call fails alone (docs/api.md)', async () => {
    const rex = await trpc.pets.create.mutate({ name: 'Rex', categoryId: 3 });
    const names = Array.from({ length: 200 }, (_, i) => `Pup ${i}`);
    const pups = await Promise.all(names.map((name) => trpc.pets.create.mutate({ name, categoryId: 7 })));
    const again = await Promise.all(pups.map((pup) => trpc.pets.get.query({ petId: pup.id })));
    expect(pups.map((pup) => pup.name)).toEqual(names);
    expect(new Set(pups.map((pup) => pup.id)).size).toBe(200);
    expect(again).toEqual(pups);

    const [found, missing] = await Promise.allSettled([trpc.pets.get.query({ petId: rex.id }), trpc.pets.get.query({ petId: 987654 })]);
    expect(found).toEqual({ status: 'fulfilled', value: rex });
    expect((missing as PromiseRejectedResult).reason.data.code).toBe('NOT_FOUND');
  });

  it('accepts a base URL with a trailing slash, and refuses a wrong key', async () => {
    expect(await createClient(`${server.baseUrl}/`, API_KEY).pets.list.query()).toBeInstanceOf(Array);
    const refused = await createClient(server.baseUrl, 'not-a-key-0123456789')
      .pets.list.query()
      .then(
        () => null,
        (error: { data?: { code?: string } }) => error.data?.code,
      );
    expect(refused).toBe('UNAUTHORIZED');
  });
});

describe('createClient: Idempotency-Keys and retries', () => {
  let proxy: FaultyProxy;
  beforeAll(async () => {
    proxy = await startFaultyProxy(server.baseUrl);
  });
  afterEach(() => proxy.reset());
  afterAll(() => proxy.close());

  const isCreate = (request: IncomingMessage) => request.method === 'POST' && request.url!.startsWith('/trpc/pets.create');
  const creates = () => proxy.seen.filter((request) => request.method === 'POST' && request.path.startsWith('/trpc/pets.create'));
  /** How many stored pets have this name (read from the server directly, page by page). */
  const stored = async (name: string) => {
    let count = 0;
    for (let after = ''; ;) {
      const page: Array<{ id: number; name: string }> = await json(server.request(`/v1/pets?limit=100${after}`));
      count += page.filter((pet) => pet.name === name).length;
      if (page.length < 100) return count;
      after = `&after=${page.at(-1)!.id}`;
    }
  };
  /** The proxy's answer in the server's place: tRPC's error shape, one per call of a batch. */
  const trpcError = (code: TRPC_ERROR_CODE_KEY, httpStatus: number) => (request: IncomingMessage) => {
    const url = new URL(request.url!, 'http://proxy');
    const one = (path: string) => ({
      error: { message: 'Not now.', code: TRPC_ERROR_CODES_BY_KEY[code], data: { code, httpStatus, path } },
    });
    const paths = url.pathname.slice('/trpc/'.length).split(',');
    return url.searchParams.get('batch') === '1' ? paths.map(one) : one(paths[0]!);
  };
  /** The error a call failed with (the test fails if it succeeded). */
  const failureOf = (call: Promise<unknown>) =>
    call.then(
      () => expect.unreachable('the call succeeded'),
      (error: unknown) => error,
    );

  it('every create sends an Idempotency-Key of its own, one create per request; a key given in the call is sent as it is', async () => {
    const api = createClient(proxy.baseUrl, API_KEY);
    await Promise.all([
      ...[1, 2, 3].map((i) => api.pets.create.mutate({ name: `Keyed ${i}`, categoryId: 1 })),
      api.pets.create.mutate({ name: 'Keyed by caller', categoryId: 1 }, { context: { idempotencyKey: 'order-7431' } }),
    ]);
    expect(creates()).toHaveLength(4);
    expect(new Set(creates().map((request) => request.idempotencyKey)).size).toBe(4);
    expect(creates().map((request) => request.idempotencyKey)).toContain('order-7431');
    expect(creates().every((request) => /^[\w-]{8,}$/.test(request.idempotencyKey ?? ''))).toBe(true);
    // Queries made together still go out as one batch, without a key.
    await Promise.all([api.pets.list.query(), api.pets.list.query({ limit: 1 })]);
    expect(proxy.seen.slice(4).map((request) => [request.path.split('?')[0], request.idempotencyKey])).toEqual([
      ['/trpc/pets.list,pets.list', undefined],
    ]);
  });

  it('a create whose answer was lost is retried with the same key: one pet, and the call gets it', async () => {
    proxy.dropAnswerOnce(isCreate);
    const pet = await createClient(proxy.baseUrl, API_KEY).pets.create.mutate({ name: 'Lost once', categoryId: 2 });
    expect(pet).toEqual({ id: expect.any(Number), name: 'Lost once', categoryId: 2, status: 'available' });
    expect(creates().map((request) => request.fault)).toEqual(['answer dropped', undefined]);
    expect(creates()[0]!.idempotencyKey).toBe(creates()[1]!.idempotencyKey);
    expect(await stored('Lost once')).toBe(1);
  });

  it('a call that gets no answer is retried once only, and its error says what may be wrong', async () => {
    const isList = (request: IncomingMessage) => request.url!.startsWith('/trpc/pets.list');
    for (let drop = 0; drop < 3; drop++) proxy.dropAnswerOnce(isList);
    const error = await failureOf(createClient(proxy.baseUrl, API_KEY).pets.list.query({ limit: 1 }));
    expect(error).toBeInstanceOf(TRPCClientError);
    expect((error as TRPCClientError<never>).data).toBeUndefined();
    expect((error as Error).message).toMatch(
      new RegExp(`^No answer from ${proxy.baseUrl}/trpc \\(.+\\): the service is down or unreachable$`),
    );
    expect(proxy.seen.map((request) => request.fault)).toEqual(['answer dropped', 'answer dropped']);
  });

  it('a 503 with Retry-After is retried after that long, with the same key', async () => {
    proxy.answerInstead(isCreate, { status: 503, headers: { 'retry-after': '1' }, body: trpcError('SERVICE_UNAVAILABLE', 503) });
    const pet = await createClient(proxy.baseUrl, API_KEY).pets.create.mutate({ name: 'After a 503', categoryId: 2 });
    expect(pet.name).toBe('After a 503');
    const [refused, retried] = creates();
    expect(refused!.fault).toBe('answered instead');
    expect(retried!.at - refused!.at).toBeGreaterThanOrEqual(950);
    expect(retried!.idempotencyKey).toBe(refused!.idempotencyKey);
    expect(await stored('After a 503')).toBe(1);
  });

  it('queries answered 429 are retried too (Retry-After: 0, at once)', async () => {
    const isList = (request: IncomingMessage) => request.url!.startsWith('/trpc/pets.list');
    proxy.answerInstead(isList, { status: 429, headers: { 'retry-after': '0' }, body: trpcError('TOO_MANY_REQUESTS', 429) }, 2);
    expect(await createClient(proxy.baseUrl, API_KEY).pets.list.query({ limit: 1 })).toHaveLength(1);
    expect(proxy.seen.map((request) => request.fault)).toEqual(['answered instead', 'answered instead', undefined]);
  });

  it('retries are bounded: after the first attempt and `retries` more, the call fails with the last answer', async () => {
    proxy.answerInstead(isCreate, { status: 503, headers: { 'retry-after': '0' }, body: trpcError('SERVICE_UNAVAILABLE', 503) }, 10);
    const error = await failureOf(
      createClient(proxy.baseUrl, API_KEY, { retries: 2 }).pets.create.mutate({ name: 'Never', categoryId: 2 }),
    );
    expect(error).toBeInstanceOf(TRPCClientError);
    expect((error as TRPCClientError<never>).data).toMatchObject({ code: 'SERVICE_UNAVAILABLE', httpStatus: 503 });
    expect(creates()).toHaveLength(3);
  });

  it('a Retry-After longer than maxRetryDelayMs is not waited for: the 429 is the answer at once', async () => {
    const limited = await startTestServer({ config: { rateLimitPerMinute: 1 } });
    const limitedProxy = await startFaultyProxy(limited.baseUrl);
    try {
      const api = createClient(limitedProxy.baseUrl, API_KEY, { maxRetryDelayMs: 500 });
      await api.pets.list.query();
      const error = await failureOf(api.pets.list.query());
      expect(error).toBeInstanceOf(TRPCClientError);
      expect((error as TRPCClientError<never>).data).toMatchObject({ code: 'TOO_MANY_REQUESTS', httpStatus: 429 });
      expect(limitedProxy.seen).toHaveLength(2);
    } finally {
      await limitedProxy.close();
      await limited.close();
    }
  });

  it('answers that retrying cannot change are not retried (404, 400, 401)', async () => {
    const api = createClient(proxy.baseUrl, API_KEY);
    await failureOf(api.pets.get.query({ petId: 987654 }));
    await failureOf(api.pets.create.mutate({ name: '', categoryId: 1 }));
    await failureOf(createClient(proxy.baseUrl, 'not-a-key-0123456789').pets.list.query());
    expect(proxy.seen).toHaveLength(3);
  });
});

describe('createRestClient: openapi-fetch on the generated REST types (for REST users in TypeScript)', () => {
  it('creates, lists and gets pets with typed results', async () => {
    const created = await rest.POST('/pets', { body: { name: 'Bella', categoryId: 2, status: 'pending' } });
    expect(created.response.status).toBe(201);
    expectTypeOf(created.data).toEqualTypeOf<Pet | undefined>();
    const bella = created.data!;
    expect(bella).toEqual({ id: expect.any(Number), name: 'Bella', categoryId: 2, status: 'pending' });

    const listed = await rest.GET('/pets', { params: { query: { status: 'pending', limit: 10 } } });
    expect(listed.data).toEqual([bella]);

    const got = await rest.GET('/pets/{petId}', { params: { path: { petId: bella.id } } });
    expect(got.data).toEqual(bella);
    expect(got.response.headers.get('deprecation')).toMatch(/^@\d+$/);
  });

  it('types errors as the envelope', async () => {
    const missing = await rest.GET('/pets/{petId}', { params: { path: { petId: 987654 } } });
    expectTypeOf(missing.error).toEqualTypeOf<ErrorBody | undefined>();
    expect(missing.error).toEqual({ code: 'NOT_FOUND', message: expect.any(String), status: 404 });
  });
});

describe('wrong calls do not compile', () => {
  // Never called: each marked line must be a type error, or tsc fails on the unused directive.
  function wrongCalls() {
    // @ts-expect-error categoryId is required
    void trpc.pets.create.mutate({ name: 'Rex' });
    // @ts-expect-error colour is not a field of a new pet
    void trpc.pets.create.mutate({ name: 'Rex', categoryId: 1, colour: 'brown' });
    // @ts-expect-error status is one of available, pending, sold
    void trpc.pets.list.query({ status: 'lost' });
    // @ts-expect-error categoryId is required
    void rest.POST('/pets', { body: { name: 'Rex' } });
    // @ts-expect-error a misspelt field: categoryID is not categoryId
    void rest.POST('/pets', { body: { name: 'Rex', categoryID: 1 } });
    // (An extra field beside all the right ones compiles with openapi-fetch, whose body type is
    // not an object literal's target; the server refuses it: see the test below.)
    // @ts-expect-error categoryId is a number
    void rest.POST('/pets', { body: { name: 'Rex', categoryId: '1' } });
    // @ts-expect-error there is no DELETE
    void rest.DELETE('/pets/{petId}', { params: { path: { petId: 1 } } });
  }

  it('the inputs are exactly the contract', () => {
    expectTypeOf(wrongCalls).toBeFunction();
    type NewPetBody = NonNullable<RestPaths['/pets']['post']['requestBody']>['content']['application/json'];
    expectTypeOf<NewPetBody>().toEqualTypeOf<{ name: string; categoryId: number; status?: 'available' | 'pending' | 'sold' }>();
    expectTypeOf<{ name: string }>().not.toExtend<NewPetBody>();
    expectTypeOf(trpc.pets.create.mutate)
      .parameter(0)
      .toEqualTypeOf<{ name: string; categoryId: number; status?: 'available' | 'pending' | 'sold' | undefined }>();
  });

  it('and the server refuses what the types refuse', async () => {
    const missing = await rest.POST('/pets', { body: { name: 'Rex' } as never });
    expect(missing.error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringMatching(/categoryId: is required/) });
    const extra = await rest.POST('/pets', { body: { name: 'Rex', categoryId: 1, colour: 'brown' } as never });
    expect(extra.response.status).toBe(400);
  });
});

describe('client/src/rest-api.ts', () => {
  it('matches the document the server serves (else: npm run openapi:types)', async () => {
    const committed = await readFile(REST_API_TYPES_FILE, 'utf8');
    expect(committed, 'the committed REST types are stale: run `npm run openapi:types` and commit the result').toBe(
      await generateRestApiTypes(),
    );
  });
});
