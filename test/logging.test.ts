// Request logs: one JSON line per request with its id, method, route pattern, status and duration,
// read from a real server's log output; never a credential.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../src/logger.js';
import { API_KEY, json, startTestServer, type TestServer } from './support/test-server.js';

/** Everything the logger writes, as it was written. */
const output: string[] = [];
const capture = new Writable({
  write(chunk: Buffer, _encoding, done) {
    output.push(chunk.toString());
    done();
  },
});
const entries = () => output.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ logger: createLogger({ logLevel: 'info' }, capture) });
});
afterAll(() => server.close());

/** The log entries of one request; the line is written just after the response leaves. */
async function logOf(requestId: string, count = 1) {
  return vi.waitFor(() => {
    const lines = entries().filter((entry) => entry.reqId === requestId);
    expect(lines).toHaveLength(count);
    return lines;
  });
}

describe('request logs', () => {
  it('one "request completed" line per REST request, with the route pattern and the caller\'s X-Request-Id', async () => {
    const pet = await json(server.post('/v1/pets', { name: 'Logged', categoryId: 1 }));
    const response = await server.request(`/v1/pets/${pet.id}`, { headers: { 'x-request-id': 'trace-rest-1' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe('trace-rest-1');

    const [line] = await logOf('trace-rest-1');
    expect(line).toMatchObject({
      level: 30,
      msg: 'request completed',
      method: 'GET',
      route: '/v1/pets/{petId}',
      url: `/v1/pets/${pet.id}`,
      statusCode: 200,
      responseTimeMs: expect.any(Number),
    });
  });

  it('generates a request id when the caller sends none, and returns it', async () => {
    const response = await server.request('/v1/pets?limit=1');
    const id = response.headers.get('x-request-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const [line] = await logOf(id);
    expect(line).toMatchObject({ route: '/v1/pets', statusCode: 200 });
  });

  it('names the tRPC procedure as the route', async () => {
    await fetch(`${server.baseUrl}/trpc/pets.list`, { headers: { authorization: `Bearer ${API_KEY}`, 'x-request-id': 'trace-trpc-1' } });
    const [line] = await logOf('trace-trpc-1');
    expect(line).toMatchObject({ method: 'GET', route: '/trpc/pets.list', statusCode: 200 });
  });

  it('logs refused and unknown requests too, with their status', async () => {
    await server.request('/v1/pets', { headers: { authorization: '', 'x-request-id': 'trace-401' } });
    await server.request('/nowhere', { headers: { 'x-request-id': 'trace-404' } });
    await fetch(`${server.baseUrl}/healthz`, { headers: { 'x-request-id': 'trace-health' } });
    expect((await logOf('trace-401'))[0]).toMatchObject({ route: '/v1/pets', statusCode: 401 });
    expect((await logOf('trace-404'))[0]).toMatchObject({ route: null, url: '/nowhere', statusCode: 404 });
    expect((await logOf('trace-health'))[0]).toMatchObject({ route: '/healthz', statusCode: 200 });
  });

  it('never contains a key or the Authorization header, whatever the request', async () => {
    const wrongKey = 'wrong-key-that-must-not-leak-0123';
    await server.post('/v1/pets', { name: 'Keyed', categoryId: 2 }, { 'x-request-id': 'trace-key-1' });
    await server.post('/v1/pets', '{"name":', { 'x-request-id': 'trace-key-2' }); // invalid JSON → 400
    await server.request('/v1/pets', { headers: { authorization: `Bearer ${wrongKey}`, 'x-request-id': 'trace-key-3' } });
    await fetch(`${server.baseUrl}/trpc/pets.create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'x-request-id': 'trace-key-4' },
      body: JSON.stringify({ name: 'Keyed', categoryId: 2 }),
    });
    for (const id of ['trace-key-1', 'trace-key-2', 'trace-key-3', 'trace-key-4']) await logOf(id);

    const everything = output.join('');
    expect(everything).toContain('trace-key-4'); // the capture does hold these requests' lines
    expect(everything).not.toContain(API_KEY);
    expect(everything).not.toContain(wrongKey);
    expect(everything).not.toMatch(/authorization|bearer/i);
  });

  it('LOG_LEVEL above info leaves request lines out', () => {
    const quiet: string[] = [];
    const logger = createLogger({ logLevel: 'warn' }, { write: (line: string) => void quiet.push(line) });
    logger.info({ route: '/v1/pets' }, 'request completed');
    logger.warn('kept');
    expect(quiet.map((line) => JSON.parse(line).msg)).toEqual(['kept']);
  });
});
