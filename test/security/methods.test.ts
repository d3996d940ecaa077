// Any method on any path answers a 4xx in the surface's shape (405 with Allow where the path exists
// and the method cannot be served) or the route's own answer: never a 5xx, never a dropped socket.
// TRACE under /trpc used to answer 500 (undici, under tRPC's Fetch-based handler, refuses the
// method) and log a stack each time; CONNECT was dropped unanswered.
import { METHODS, request } from 'node:http';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, json, startTestServer, type TestServer } from '../support/test-server.js';

const logLines: Array<{ level: number; msg: string }> = [];
let server: TestServer;
let port: number;
beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) logLines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  server = await startTestServer({ logger: pino({ level: 'info' }, sink) });
  port = Number(new URL(server.baseUrl).port);
});
afterAll(() => server?.close());

interface RawAnswer {
  status: number;
  allow: string | undefined;
  body: string;
}

/** One request on its own connection; a dropped connection or a 10 s silence rejects. */
function send(method: string, path: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, agent: false, headers: { authorization: `Bearer ${API_KEY}` } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, allow: res.headers.allow, body }));
    });
    // CONNECT's answer arrives as 'connect' (Node's client treats any answer to it as a tunnel).
    req.on('connect', (res, socket, head) => {
      let body = head.toString();
      socket.on('data', (chunk: Buffer) => (body += chunk.toString()));
      socket.on('close', () => resolve({ status: res.statusCode!, allow: res.headers.allow, body }));
    });
    req.on('error', (error) => reject(new Error(`${method} ${path}: ${error.message}`)));
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.end();
  });
}

const PATHS = [
  '/trpc/pets.list',
  '/trpc/pets.create',
  '/trpc/pets.nope',
  '/trpc/pets.list,pets.get?batch=1',
  '/trpc',
  '/v1/pets',
  '/v1/pets/1',
  '/v1/nope',
  '/v1/docs',
  '/v1/openapi.json',
  '/healthz',
  '/readyz',
  '/metrics',
  '/',
  '/nope',
];

describe('no method answers 5xx', () => {
  it(`every method Node parses (${METHODS.length}) on ${PATHS.length} paths: a 4xx or the route's answer, in the surface's shape`, async () => {
    const failures: string[] = [];
    for (const method of METHODS) {
      for (const path of PATHS) {
        const answer = await send(method, path);
        if (answer.status >= 500) failures.push(`${method} ${path}: ${answer.status} ${answer.body.slice(0, 120)}`);
        if (answer.status >= 400 && method !== 'HEAD') {
          const body = JSON.parse(answer.body) as { error?: { data: { httpStatus: number } }; status?: number };
          const status = path.startsWith('/trpc') ? body.error?.data.httpStatus : body.status;
          if (status !== answer.status) failures.push(`${method} ${path}: not in the surface's shape: ${answer.body.slice(0, 120)}`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(logLines.filter((line) => line.level >= 50).map((line) => line.msg)).toEqual([]);
  });

  it('TRACE under /trpc: 405 with Allow in tRPC’s shape; CONNECT: 405 with Allow in the envelope', async () => {
    for (const path of ['/trpc/pets.list', '/trpc/pets.create', '/trpc/pets.nope']) {
      const answer = await send('TRACE', path);
      expect(answer.status).toBe(405);
      expect(answer.allow).toBe('GET, POST');
      expect(JSON.parse(answer.body)).toMatchObject({ error: { data: { code: 'METHOD_NOT_SUPPORTED', httpStatus: 405 } } });
    }
    const connect = await send('CONNECT', 'example.com:443');
    expect(connect.status).toBe(405);
    expect(connect.allow).toBe('GET, HEAD, POST');
    expect(JSON.parse(connect.body)).toMatchObject({ code: 'METHOD_NOT_SUPPORTED', status: 405 });
  });

  it('a path outside /v1 and /trpc served with other methods: 405 with Allow in the envelope; an unknown one: 404', async () => {
    for (const path of ['/healthz', '/readyz', '/', '/metrics']) {
      for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS', 'TRACE']) {
        const answer = await send(method, path);
        expect(answer.status, `${method} ${path}`).toBe(405);
        expect(answer.allow, `${method} ${path}`).toBe('GET, HEAD');
        expect(JSON.parse(answer.body)).toMatchObject({ code: 'METHOD_NOT_SUPPORTED', status: 405 });
      }
    }
    // Paths that read as route patterns (`*`, `:name`) are looked up as paths, not patterns.
    for (const path of ['/nope', '/**/%00', '/:id', '/healthz*']) {
      const unknown = await send('POST', path);
      expect(unknown.status, path).toBe(404);
      expect(unknown.allow, path).toBeUndefined();
    }
  });

  it('a flood of TRACE and CONNECT from 4 connections: a legitimate client reads 200 each time, nothing logged as an error', async () => {
    let flooding = true;
    const flood = async (method: string, path: string) => {
      while (flooding) expect((await send(method, path)).status).toBe(405);
    };
    const floods = [
      flood('TRACE', '/trpc/pets.list'),
      flood('TRACE', '/trpc/pets.create'),
      flood('TRACE', '/trpc/pets.get'),
      flood('CONNECT', '127.0.0.1:22'),
    ];
    try {
      for (let i = 0; i < 50; i++) {
        const response = await server.request('/trpc/pets.list');
        expect(response.status).toBe(200);
        await json(response);
      }
    } finally {
      flooding = false;
      await Promise.all(floods);
    }
    expect(logLines.filter((line) => line.level >= 50).map((line) => line.msg)).toEqual([]);
  });
});
