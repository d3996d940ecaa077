// The typed tRPC surface at /trpc, called the way internal TypeScript apps call it.
import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import type { AppRouter } from '../src/api/root-router.js';
import { API_KEY, startTestServer, type TestServer } from './support/test-server.js';

let server: TestServer;
let trpc: ReturnType<typeof createTRPCClient<AppRouter>>;
beforeAll(async () => {
  server = await startTestServer();
  trpc = createTRPCClient<AppRouter>({
    links: [httpBatchLink({ url: `${server.baseUrl}/trpc`, headers: { authorization: `Bearer ${API_KEY}` } })],
  });
});
afterAll(() => server.close());

async function trpcError(call: Promise<unknown>) {
  const error = await call.then(
    () => null,
    (cause: unknown) => cause,
  );
  expect(error).toBeInstanceOf(TRPCClientError);
  return error as TRPCClientError<AppRouter>;
}

describe('pets over tRPC', () => {
  it('creates, lists and gets with end-to-end types', async () => {
    const created = await trpc.pets.create.mutate({ name: 'Rex', categoryId: 2, status: 'pending' });
    expectTypeOf(created).toEqualTypeOf<{ id: number; name: string; categoryId: number; status: 'available' | 'pending' | 'sold' }>();
    expect(created).toEqual({ id: expect.any(Number), name: 'Rex', categoryId: 2, status: 'pending' });

    const listed = await trpc.pets.list.query({ status: 'pending', limit: 5 });
    expect(listed).toContainEqual(created);
    expect(await trpc.pets.list.query()).toContainEqual(created);
    expect(await trpc.pets.get.query({ petId: created.id })).toEqual(created);
  });

  it('answers NOT_FOUND for an unknown id', async () => {
    const error = await trpcError(trpc.pets.get.query({ petId: 987654 }));
    expect(error.data?.code).toBe('NOT_FOUND');
    expect(error.data?.httpStatus).toBe(404);
  });

  it('answers BAD_REQUEST for invalid input, with no stack trace', async () => {
    const error = await trpcError(trpc.pets.create.mutate({ name: '', categoryId: 1.5 }));
    expect(error.data?.code).toBe('BAD_REQUEST');
    expect(error.data?.httpStatus).toBe(400);
    expect(error.data?.stack).toBeUndefined();
    expect(error.message).toMatch(/name/);
  });

  it('is as strict as REST: no coercion of strings to numbers, even after REST calls and the document', async () => {
    // REST calls and the generated document first: the schemas are shared with REST, and
    // trpc-to-openapi's own handler (not used here) would switch zod's coercion on for them.
    await server.request('/v1/pets?limit=3');
    await server.request('/v1/pets/1');
    await server.post('/v1/pets', { name: 'Warm-up', categoryId: 1 });
    expect((await server.request('/v1/openapi.json')).status).toBe(200);
    for (const call of [
      // @ts-expect-error a string is not an int64
      () => trpc.pets.create.mutate({ name: 'Rex', categoryId: '7' }),
      // @ts-expect-error a string is not an id
      () => trpc.pets.get.query({ petId: '7' }),
      // @ts-expect-error a string is not a limit
      () => trpc.pets.list.query({ limit: '2' }),
      // @ts-expect-error a string is not an id
      () => trpc.pets.list.query({ after: '1' }),
      // @ts-expect-error null is not a name
      () => trpc.pets.create.mutate({ name: null, categoryId: 7 }),
      () => trpc.pets.create.mutate({ name: 'Rex', categoryId: 2 ** 53 }),
      () => trpc.pets.list.query({ limit: 0 }),
      () => trpc.pets.list.query({ limit: 2.5 }),
    ]) {
      expect((await trpcError(call())).data?.code).toBe('BAD_REQUEST');
    }
  });

  it('marks the deprecated procedure with the same headers as REST', async () => {
    const created = await trpc.pets.create.mutate({ name: 'Old', categoryId: 1 });
    const response = await server.request(`/trpc/pets.get?input=${encodeURIComponent(JSON.stringify({ petId: created.id }))}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
    expect(response.headers.get('deprecation')).toMatch(/^@\d+$/);
  });

  it('shares one database with REST', async () => {
    const viaRest = (await (await server.post('/v1/pets', { name: 'Both', categoryId: 3 })).json()) as { id: number };
    expect((await trpc.pets.get.query({ petId: viaRest.id })).name).toBe('Both');
  });
});
