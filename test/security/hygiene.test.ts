// Limits and hygiene: headers on every response, CORS off unless configured.
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('response headers', () => {
  it.each([
    ['a list', '/v1/pets', {}],
    ['a 404', '/v1/nowhere', {}],
    ['a 401', '/v1/pets', { authorization: 'Bearer nope-nope-nope-nope' }],
    ['a 400', '/v1/pets?limit=x', {}],
    ['the document', '/v1/openapi.json', {}],
    ['tRPC', '/trpc/pets.list', {}],
  ])('%s carries nosniff and no-store', async (_label, path, headers) => {
    server = await startTestServer();
    const response = await server.request(path, { headers });
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('cache-control')).toBe('no-store');
  });
});

describe('CORS', () => {
  it('is off by default: no CORS headers, and a preflight is refused (test/http/cors.test.ts)', async () => {
    server = await startTestServer();
    const response = await server.request('/v1/pets', { headers: { origin: 'https://evil.example' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await fetch(`${server.baseUrl}/v1/pets`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    expect(preflight.status).toBe(400);
  });

  it('allows exactly the configured origins', async () => {
    server = await startTestServer({ config: { corsOrigins: ['https://app.example.com'] } });
    const allowed = await server.request('/v1/pets', { headers: { origin: 'https://app.example.com' } });
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(allowed.headers.get('access-control-expose-headers')).toMatch(/ratelimit/);

    const other = await server.request('/v1/pets', { headers: { origin: 'https://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();

    const preflight = await fetch(`${server.baseUrl}/v1/pets`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, idempotency-key',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/idempotency-key/);
  });
});
