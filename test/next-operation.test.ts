// Issue 37's "next operation": a router with two procedures more than the app's (defined here, in
// the test only: a GET query and a DELETE mutation answering 204 No Content) is served by buildApp
// as it is, and everything per operation follows from the procedures and their metadata with no
// other file touched: both surfaces, 401, the document, `Allow` (CONNECT's too), a CORS preflight,
// the RateLimit headers and the metrics.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { z } from 'zod';
import { petsRouter } from '../src/api/pets-router.js';
import { protectedProcedure, router, type Context } from '../src/api/trpc.js';
import { GetPetInput } from '../src/domain/pet-schemas.js';
import { restOperations } from './support/operations.js';
import { scrape } from './support/prometheus.js';
import { redoclyProblems } from './support/redocly.js';
import { API_KEY, json, startTestServer, type TestServer } from './support/test-server.js';

/** The ids the DELETE procedure was called with, in order: what it did, seen from here. */
const removed: number[] = [];

const TAGS = ['Pets'];
const ERROR_RESPONSES = { 400: 'Invalid `petId`.', 401: 'Missing or invalid API key.', 404: 'No such animal.', 429: 'Rate limit reached.' };

/** The pet with `petId`, or the procedure's 404. */
async function petOr404(pets: Context['pets'], petId: number) {
  const pet = await pets.findById(petId);
  if (!pet) throw new TRPCError({ code: 'NOT_FOUND', message: `No pet has id ${petId}.` });
  return pet;
}

/** The app's pet procedures and two more. */
const largerRouter = router({
  pets: router({
    ...petsRouter._def.record,
    describe: protectedProcedure
      .meta({
        openapi: {
          method: 'GET',
          path: '/pets/{petId}/summary',
          operationId: 'describePet',
          tags: TAGS,
          summary: 'One line about an animal',
          errorResponses: ERROR_RESPONSES,
        },
      })
      // A number that need not be an integer: read as a plain decimal.
      .input(GetPetInput.extend({ scale: z.number().positive().optional() }))
      .output(z.object({ summary: z.string() }))
      .query(async ({ ctx, input }) => {
        const pet = await petOr404(ctx.pets, input.petId);
        return { summary: `${pet.name} (${pet.status})${input.scale === undefined ? '' : ` ×${input.scale}`}` };
      }),
    remove: protectedProcedure
      .meta({
        successStatus: 204,
        openapi: {
          method: 'DELETE',
          path: '/pets/{petId}',
          operationId: 'removePet',
          tags: TAGS,
          summary: 'Remove an animal',
          successDescription: 'Removed; nothing to say.',
          errorResponses: ERROR_RESPONSES,
        },
      })
      .input(GetPetInput)
      .output(z.void())
      .mutation(async ({ ctx, input }) => {
        await petOr404(ctx.pets, input.petId);
        removed.push(input.petId);
      }),
  }),
});

const ORIGIN = 'https://shop.example';
let server: TestServer;
let petId: number;
beforeAll(async () => {
  server = await startTestServer({
    router: largerRouter,
    config: { corsOrigins: [ORIGIN], rateLimitPerMinute: 1_000, metricsEnabled: true, metricsPort: null },
  });
  petId = (await json(server.post('/v1/pets', { name: 'Rex', categoryId: 1 }))).id;
});
afterAll(() => server.close());

const trpc = () =>
  createTRPCClient<typeof largerRouter>({
    links: [httpLink({ url: `${server.baseUrl}/trpc`, headers: { authorization: `Bearer ${API_KEY}` } })],
  });

describe('a router with two more procedures, served as it is', () => {
  it('REST: the query answers 200 with its body, the DELETE 204 with none; both with RateLimit headers', async () => {
    const described = await server.request(`/v1/pets/${petId}/summary`);
    expect(described.status).toBe(200);
    expect(await described.json()).toEqual({ summary: 'Rex (available)' });
    expect(described.headers.get('ratelimit')).toMatch(/^"per-key";r=\d+;t=\d+$/);

    const deleted = await server.request(`/v1/pets/${petId}`, { method: 'DELETE' });
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe('');
    expect(deleted.headers.get('content-type')).toBeNull();
    expect(deleted.headers.get('ratelimit')).toMatch(/^"per-key";r=\d+;t=\d+$/);
    expect(deleted.headers.get('ratelimit-policy')).toBe('"per-key";q=1000;w=60');
    expect(removed).toEqual([petId]);

    // Their input and errors are the procedures', in the envelope.
    expect(await json(server.request('/v1/pets/x', { method: 'DELETE' }))).toEqual({
      code: 'BAD_REQUEST',
      message: 'petId: must be an integer',
      status: 400,
    });
    expect((await server.request('/v1/pets/987654/summary')).status).toBe(404);
    expect((await server.request(`/v1/pets/${petId}`, { method: 'DELETE', headers: { authorization: '' } })).status).toBe(401);
    expect(removed).toEqual([petId]);
  });

  it('tRPC: the same procedures through the typed client, their types inferred from the router', async () => {
    const client = trpc();
    const described = await client.pets.describe.query({ petId });
    expectTypeOf(described).toEqualTypeOf<{ summary: string }>();
    expect(described).toEqual({ summary: 'Rex (available)' });
    const result = await client.pets.remove.mutate({ petId });
    expect(result).toBeUndefined();
    expect(removed).toEqual([petId, petId]);
    const missing = await client.pets.remove.mutate({ petId: 987_654 }).catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(TRPCClientError);
    expect((missing as TRPCClientError<typeof largerRouter>).data?.httpStatus).toBe(404);
    const keyless = createTRPCClient<typeof largerRouter>({ links: [httpLink({ url: `${server.baseUrl}/trpc` })] });
    const refused = await keyless.pets.describe.query({ petId }).catch((error: unknown) => error);
    expect((refused as TRPCClientError<typeof largerRouter>).data?.httpStatus).toBe(401);
    // The app's own procedures are still there.
    expect((await client.pets.get.query({ petId })).name).toBe('Rex');
  });

  it('the document describes both, the DELETE with a 204 and no body; it stays valid', async () => {
    const doc = (await json(fetch(`${server.baseUrl}/v1/openapi.json`))) as {
      paths: Record<string, Record<string, { operationId: string; responses: Record<string, Record<string, unknown>> }>>;
    };
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
    const dir = await mkdtemp(join(tmpdir(), 'animal-store-next-operation-'));
    try {
      await writeFile(join(dir, 'openapi.json'), JSON.stringify(doc));
      expect(await redoclyProblems(join(dir, 'openapi.json'))).toEqual({ problems: [], errors: 0, warnings: 0 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, operation]) => `${method.toUpperCase()} ${path} ${operation.operationId}`),
    );
    expect(operations.sort()).toEqual(
      restOperations(largerRouter)
        .map((op) => `${op.method} ${op.path} ${op.operationId}`)
        .sort(),
    );
    expect(operations).toEqual(expect.arrayContaining(['GET /pets/{petId}/summary describePet', 'DELETE /pets/{petId} removePet']));

    const remove = doc.paths['/pets/{petId}']!.delete!.responses;
    expect(Object.keys(remove)).not.toContain('200');
    expect(remove['204']).toEqual({
      description: 'Removed; nothing to say.',
      headers: expect.objectContaining({ RateLimit: expect.anything(), 'RateLimit-Policy': expect.anything() }),
    });
    // Its examples: a 400 in the words of its parameter's check, its other statuses in the service's.
    const example = (status: string) => (remove[status]!.content as Record<string, { example: unknown }>)['application/json']!.example;
    expect(example('400')).toEqual({ code: 'BAD_REQUEST', message: 'petId: must be an integer', status: 400 });
    expect(example('401')).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    expect(remove['401']!.headers).not.toHaveProperty('RateLimit');
    expect(remove['404']!.headers).toHaveProperty('RateLimit');
    const describe = doc.paths['/pets/{petId}/summary']!.get!.responses;
    expect(Object.keys(describe)).toEqual(expect.arrayContaining(['200', '400', '401', '404', '429', '503']));
  });

  it('Allow: the path shared with getPet lists DELETE; CONNECT lists it among the methods served anywhere', async () => {
    const put = await server.request(`/v1/pets/${petId}`, { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, HEAD, DELETE');
    expect((await server.request(`/v1/pets/${petId}/summary`, { method: 'DELETE' })).headers.get('allow')).toBe('GET, HEAD');
    expect((await server.request('/v1/pets', { method: 'DELETE' })).headers.get('allow')).toBe('GET, HEAD, POST');
    expect(await connectAllow()).toBe('GET, HEAD, POST, DELETE');
  });

  it('CORS: a preflight for the DELETE from a listed origin is allowed', async () => {
    const preflight = await fetch(`${server.baseUrl}/v1/pets/${petId}`, {
      method: 'OPTIONS',
      headers: { origin: ORIGIN, 'access-control-request-method': 'DELETE', 'access-control-request-headers': 'authorization' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(preflight.headers.get('access-control-allow-methods')?.split(/,\s*/)).toEqual(expect.arrayContaining(['GET', 'POST', 'DELETE']));
  });

  it('metrics: each new operation is counted under its route pattern and procedure', async () => {
    await vi.waitFor(
      async () => {
        const scraped = await scrape(server.baseUrl);
        const count = (labels: Record<string, string>) =>
          scraped.series('http_requests_total', labels).reduce((sum, s) => sum + s.value, 0);
        expect(count({ surface: 'rest', route: '/v1/pets/{petId}', method: 'DELETE', status_code: '204' })).toBe(1);
        expect(count({ surface: 'rest', route: '/v1/pets/{petId}/summary', method: 'GET', status_code: '200' })).toBe(1);
        expect(count({ surface: 'trpc', route: 'pets.remove', method: 'POST', status_code: '200' })).toBe(1);
        expect(count({ surface: 'trpc', route: 'pets.describe', method: 'GET', status_code: '200' })).toBe(1);
      },
      { timeout: 5_000, interval: 50 },
    );
  });

  it('a number parameter that need not be an integer is read as a plain decimal, else 400; the document says `number`', async () => {
    expect(await json(server.request(`/v1/pets/${petId}/summary?scale=2.5`))).toEqual({ summary: 'Rex (available) ×2.5' });
    expect(await json(server.request(`/v1/pets/${petId}/summary?scale=25e-1`))).toEqual({ summary: 'Rex (available) ×2.5' });
    for (const scale of ['x', '0x10', '2.', 'Infinity', '1,5', '%202'])
      expect(await json(server.request(`/v1/pets/${petId}/summary?scale=${scale}`))).toEqual({
        code: 'BAD_REQUEST',
        message: 'scale: must be a number',
        status: 400,
      });
    // The schema's own rule after the shape's: positive.
    expect(await json(server.request(`/v1/pets/${petId}/summary?scale=-1`))).toMatchObject({ code: 'BAD_REQUEST', status: 400 });
    const doc = (await json(fetch(`${server.baseUrl}/v1/openapi.json`))) as {
      paths: Record<string, { get: { parameters: Array<{ name: string; schema: { type: string } }> } }>;
    };
    const parameters = doc.paths['/pets/{petId}/summary']!.get.parameters;
    expect(parameters.find(({ name }) => name === 'scale')?.schema.type).toBe('number');
    expect(parameters.find(({ name }) => name === 'petId')?.schema.type).toBe('integer');
  });
});

/** The Allow of a 405 to CONNECT (Node's client hands any answer to CONNECT over as a tunnel). */
function connectAllow(): Promise<string | undefined> {
  const { hostname, port } = new URL(server.baseUrl);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method: 'CONNECT', path: 'example.com:443', agent: false });
    req.on('connect', (response, socket) => {
      socket.destroy();
      resolve(response.headers.allow);
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.end();
  });
}
