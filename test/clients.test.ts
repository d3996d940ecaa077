// The typed clients, used as their README examples use them against a running server:
// the tRPC client entry (src/client, package export `animal-store/client`) and openapi-fetch on
// the committed REST types (src/client/rest-api.ts), which must match the served document.
// The `@ts-expect-error` lines are checked by `tsc --noEmit` (the first step of `npm test`).
import { readFile } from 'node:fs/promises';
import createFetchClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { createClient, type AnimalStoreClient, type RestComponents, type RestPaths, type RouterOutputs } from '../src/client/index.js';
import { generateRestApiTypes, REST_API_TYPES_FILE } from '../src/cli/rest-api-types.js';
import { API_KEY, startTestServer, type TestServer } from './support/test-server.js';

type Pet = RestComponents['schemas']['Pet'];
type ErrorBody = RestComponents['schemas']['Error'];

let server: TestServer;
let trpc: AnimalStoreClient;
let rest: ReturnType<typeof createFetchClient<RestPaths>>;
beforeAll(async () => {
  server = await startTestServer();
  trpc = createClient(server.baseUrl, API_KEY);
  rest = createFetchClient<RestPaths>({ baseUrl: `${server.baseUrl}/v1`, headers: { Authorization: `Bearer ${API_KEY}` } });
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

describe('openapi-fetch on the generated REST types (for REST users in TypeScript)', () => {
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

describe('src/client/rest-api.ts', () => {
  it('matches the document the server serves (else: npm run openapi:types)', async () => {
    const committed = await readFile(REST_API_TYPES_FILE, 'utf8');
    expect(committed, 'the committed REST types are stale: run `npm run openapi:types` and commit the result').toBe(
      await generateRestApiTypes(),
    );
  });
});
