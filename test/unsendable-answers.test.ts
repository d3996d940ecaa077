// An answer that cannot be written as JSON (its toJSON throws) is a 500 in the surface's shape, on
// both surfaces, logged once, and the service goes on serving: the encode runs after the procedure
// succeeded, outside its promise's failure path (call-pipeline.ts, sendOrFail).
import { createTRPCClient, httpBatchLink, httpLink, TRPCClientError } from '@trpc/client';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { petsRouter } from '../src/api/pets-router.js';
import { protectedProcedure, router } from '../src/api/trpc.js';
import { API_KEY, startTestServer, type TestServer } from './support/test-server.js';

const unsendableRouter = router({
  pets: router({
    ...petsRouter._def.record,
    unsendable: protectedProcedure
      .meta({ openapi: { method: 'GET', path: '/unsendable', operationId: 'unsendable', tags: ['Pets'] } })
      .input(z.object({}))
      .output(z.any())
      .query(() => ({
        toJSON() {
          throw new Error('not JSON');
        },
      })),
  }),
});

const lines: Array<{ level: number; statusCode?: number; err?: unknown }> = [];
let server: TestServer;
beforeAll(async () => {
  const destination = { write: (line: string) => void lines.push(JSON.parse(line)) };
  server = await startTestServer({ router: unsendableRouter, logger: pino({ level: 'info' }, destination) });
});
afterAll(() => server.close());

const client = (batched: boolean) => {
  const options = { url: `${server.baseUrl}/trpc`, headers: { authorization: `Bearer ${API_KEY}` } };
  return createTRPCClient<typeof unsendableRouter>({ links: [batched ? httpBatchLink(options) : httpLink(options)] });
};

describe('an answer that cannot be written as JSON', () => {
  it('REST: 500 in the envelope, without the cause', async () => {
    const response = await server.request('/v1/unsendable');
    expect(response.status).toBe(500);
    const body = await response.json();
    expect(body).toMatchObject({ code: 'INTERNAL_SERVER_ERROR', status: 500 });
    expect(JSON.stringify(body)).not.toContain('not JSON');
  });

  it.each([false, true])('tRPC (batched: %s): a 500 TRPCClientError, without the cause', async (batched) => {
    const failure = await client(batched)
      .pets.unsendable.query({})
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TRPCClientError);
    expect((failure as TRPCClientError<typeof unsendableRouter>).data?.httpStatus).toBe(500);
    expect((failure as Error).message).not.toContain('not JSON');
  });

  it('is logged as an error once per request, and the service goes on serving', async () => {
    lines.length = 0;
    const response = await server.request(`/trpc/pets.unsendable?input=${encodeURIComponent('{}')}`);
    expect(response.status).toBe(500);
    await vi.waitFor(() => expect(lines.filter((line) => line.statusCode === 500).length).toBe(1));
    expect(lines.filter((line) => line.level >= 50).length).toBe(1);
    const list = await client(false).pets.list.query({ limit: 1 });
    expect(Array.isArray(list)).toBe(true);
  });
});
