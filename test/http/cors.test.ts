// Preflights on both surfaces (src/http/call-pipeline.ts, admission), as a browser sends them: with CORS off or from an
// origin not listed, a 400 in the surface's error shape that names CORS_ORIGINS (not tRPC's 415 or
// REST's 405); from a listed origin, 204 with the router's methods and a Max-Age browsers keep.
// The browser's side of it: test/browser/web-app.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { appRouter } from '../../src/api/root-router.js';
import { PREFLIGHT_MAX_AGE_SECONDS } from '../../src/http/call-pipeline.js';
import { buildRestRoutes } from '../../src/http/rest-plugin.js';
import { methodsServedAnywhere } from '../../src/http/served-methods.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const APP_ORIGIN = 'http://app.example.test:5173';
const SURFACES = [
  ['/trpc', '/trpc/pets.list?batch=1&input=%7B%7D', 'GET'],
  ['/trpc (a create)', '/trpc/pets.create', 'POST'],
  ['/v1', '/v1/pets?limit=10', 'GET'],
  ['/v1 (a create)', '/v1/pets', 'POST'],
] as const;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function preflight(path: string, method: string, origin = APP_ORIGIN): Promise<Response> {
  return server!.request(path, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' },
  });
}

/** The message of an error answer, in either surface's shape (tRPC's `error.message`, REST's envelope). */
async function errorOf(response: Response): Promise<{ code: unknown; message: string }> {
  const body = (await response.json()) as { error?: { message: string; data: { code: string } }; code?: string; message?: string };
  return body.error ? { code: body.error.data.code, message: body.error.message } : { code: body.code, message: body.message! };
}

describe('CORS off (the default): a preflight says what is missing', () => {
  it.each(SURFACES)('%s: 400 in its error shape, naming CORS_ORIGINS; no CORS header', async (_surface, path, method) => {
    server = await startTestServer();
    const response = await preflight(path, method);
    expect(response.status).toBe(400);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(await errorOf(response)).toEqual({
      code: 'BAD_REQUEST',
      message: `Cross-origin call refused: CORS is off on this service (CORS_ORIGINS is empty). Add ${APP_ORIGIN} to CORS_ORIGINS, or call the service from the page's own origin through a proxy.`,
    });
  });

  it('an OPTIONS that is not a preflight is answered as before (REST: 405 with Allow)', async () => {
    server = await startTestServer();
    const response = await server.request('/v1/pets', { method: 'OPTIONS' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD, POST');
  });
});

describe('CORS on (CORS_ORIGINS lists the app)', () => {
  it.each(SURFACES)('%s: 204 with the router methods, the headers a call sends, and Max-Age 7200', async (_surface, path, method) => {
    server = await startTestServer({ config: { corsOrigins: [APP_ORIGIN] } });
    const response = await preflight(path, method);
    expect(response.status).toBe(204);
    expect(Object.fromEntries([...response.headers].filter(([name]) => name.startsWith('access-control-')))).toEqual({
      'access-control-allow-origin': APP_ORIGIN,
      'access-control-allow-methods': methodsServedAnywhere(buildRestRoutes(appRouter)).join(', '), // GET, HEAD, POST
      'access-control-allow-headers': 'authorization, content-type, idempotency-key, x-request-id, traceparent',
      'access-control-expose-headers': expect.stringMatching(/^x-request-id, traceparent, ratelimit, .*retry-after/),
      'access-control-max-age': '7200',
    });
  });

  it('another origin: 400 naming it and the listed ones', async () => {
    server = await startTestServer({ config: { corsOrigins: [APP_ORIGIN] } });
    const response = await preflight('/trpc/pets.create', 'POST', 'https://elsewhere.example');
    expect(response.status).toBe(400);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect((await errorOf(response)).message).toBe(
      `Cross-origin call refused: https://elsewhere.example is not in this service's CORS_ORIGINS (${APP_ORIGIN}). Add https://elsewhere.example to CORS_ORIGINS, or call the service from the page's own origin through a proxy.`,
    );
  });

  it('a call from the listed origin carries its CORS headers, errors included', async () => {
    server = await startTestServer({ config: { corsOrigins: [APP_ORIGIN] } });
    const response = await server.request('/trpc/pets.list?batch=1&input=%7B%7D', {
      headers: { origin: APP_ORIGIN, authorization: 'Bearer not-a-key-0123456789' },
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
    expect(response.headers.get('access-control-expose-headers')).toMatch(/retry-after/);
  });
});

describe('the allowed methods', () => {
  it('are those the service answers, read from the router: GET, HEAD and POST here (a DELETE procedure: test/next-operation.test.ts)', () => {
    expect(methodsServedAnywhere(buildRestRoutes(appRouter))).toEqual(['GET', 'HEAD', 'POST']);
    expect(PREFLIGHT_MAX_AGE_SECONDS).toBeLessThanOrEqual(7200); // Chromium keeps no preflight longer
  });
});
