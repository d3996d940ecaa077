// The departures of docs/architecture.md ("Where we depart from a library") that no suite of their
// own guards: each test fails when the library behaviour a departure relies on changes, or when the
// departure stops doing what it is there for.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';
import { initTRPC, type AnyTRPCRouter } from '@trpc/server';
import Sqlite from 'better-sqlite3';
import type { FastifyRequest } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { trpcInternals, TrpcInternalsError } from '../src/api/trpc-internals.js';
import { migrateDatabase, openDatabase, type Database } from '../src/db/database.js';
import { requestChildLogger, traceContextOf } from '../src/http/request-record.js';
import { pino } from 'pino';
import { createLogger, plainInfoWriter } from '../src/logger.js';
import { addTraceLogFields } from '../src/http/request-record.js';
import { startTestServer } from './support/test-server.js';
import { halfClosedRequest } from './support/half-closed.js';
import { answerHalfClosedClients } from '../src/http/connections.js';

type Middleware = ((...args: never[]) => unknown) & { _type?: string };

describe("the middleware runner's reliance on tRPC's internals (src/api/trpc-internals.ts)", () => {
  const t = initTRPC.create();
  /** A new router each time: trpcInternals checks a router once and remembers it. */
  const router = () =>
    t.router({
      get: t.procedure
        .input(z.object({ id: z.number() }))
        .output(z.object({ id: z.number() }))
        .query(({ input }) => input),
    });
  const chainOf = (r: AnyTRPCRouter) => (r._def.procedures as Record<string, { _def: { middlewares: Middleware[] } }>).get!._def;

  it('tRPC still marks the output middleware `_type: "output"` and ends the chain with `resolveMiddleware`', () => {
    const r = router();
    const { middlewares } = chainOf(r);
    expect(middlewares.filter((m) => m._type === 'output')).toHaveLength(1);
    expect(middlewares.at(-1)!.name).toBe('resolveMiddleware');
    expect(() => trpcInternals(r)).not.toThrow();
  });

  it('refuses, at the first use, a router whose output middleware has lost its mark', () => {
    const r = router();
    for (const middleware of chainOf(r).middlewares) if (middleware._type === 'output') delete middleware._type;
    expect(() => trpcInternals(r)).toThrow(TrpcInternalsError);
    expect(() => trpcInternals(router())).not.toThrow();
  });

  it('refuses a router whose chain does not end with the resolver', () => {
    const r = router();
    const chain = chainOf(r);
    chain.middlewares = [...chain.middlewares.slice(0, -1), function somethingElse() {}];
    expect(() => trpcInternals(r)).toThrow(/last middleware is not its resolver/);
  });
});

/** Longer than SQLite's busy timeout, shorter than the service's wait for the lock (sqlite-busy-retry.ts). */
const LOCK_HELD_MS = 1_500;

describe("Prisma's SQLite adapter connection, its statements retried while the lock is taken (src/db/sqlite-busy-retry.ts)", () => {
  let dir: string | undefined;
  let database: Database | undefined;
  afterEach(async () => {
    await database?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("a Prisma write waits for another process's write lock without blocking the process, then succeeds", async () => {
    dir = mkdtempSync(join(tmpdir(), 'departures-'));
    const file = join(dir, 'store.db');
    await migrateDatabase(`file:${file}`);
    database = await openDatabase({
      databaseUrl: `file:${file}`,
      databasePoolSize: 1,
      databaseConnectTimeoutMs: 5_000,
      databaseQueryTimeoutMs: 5_000,
    });
    await database.prisma.apiKey.count(); // Prisma's adapter connection is open
    const other = new Sqlite(file);
    other.exec('BEGIN IMMEDIATE');
    // The lock is let go by a timer of this process: a driver that waited for it synchronously
    // would hold the event loop (every request, /healthz included) until SQLite's busy timeout.
    let waitedFor = 0;
    const started = performance.now();
    const release = sleep(LOCK_HELD_MS).then(() => {
      waitedFor = performance.now() - started;
      other.exec('COMMIT');
      other.close();
    });
    const write = database.prisma.apiKey.create({ data: { name: 'while-locked', hash: 'digest-while-locked' } });
    await expect(write).resolves.toMatchObject({ name: 'while-locked' });
    await release;
    expect(waitedFor).toBeLessThan(LOCK_HELD_MS + 1_000);
  });
});

describe("the request's logger made lazily (src/http/request-record.ts), against Fastify's pino child per request", () => {
  /** The app's logger (src/logger.ts) writing into `lines`, as written but for each line's time (it differs between writes). */
  function capturingLogger(lines: string[]) {
    return createLogger(
      { logLevel: 'info' },
      { write: (line: string) => void lines.push(line.replace(/^(\{"level":\d+,"time":)\d+,/, (_, head: string) => `${head}0,`)) },
    );
  }
  /** The completion line's writer, which src/http/request-record.ts calls on its own logger. */
  type Completing = { completed(fields: object, message: string): void };

  it('writes the same lines, fields in the same order, before and after something else logs', () => {
    const ours: string[] = [];
    const theirs: string[] = [];
    const raw = { headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } } as unknown as IncomingMessage;
    const lazy = requestChildLogger(capturingLogger(ours), { reqId: 'r-1' }, {}, raw);
    // The library's way: Fastify's default factory (`logger.child(bindings)`) with the same trace fields.
    const child = capturingLogger(theirs).child(addTraceLogFields({ reqId: 'r-1' }, traceContextOf({ raw } as FastifyRequest)));
    const completion = { method: 'GET', route: '/v1/pets', statusCode: 200, responseTimeMs: 1.5 };

    (lazy as unknown as Completing).completed(completion, 'request completed');
    child.info(completion, 'request completed');
    lazy.warn({ detail: 'a warning' }, 'something else logs');
    child.warn({ detail: 'a warning' }, 'something else logs');
    (lazy as unknown as Completing).completed(completion, 'request completed');
    child.info(completion, 'request completed');

    expect(ours).toHaveLength(3);
    // Byte for byte: the first line is written by plainInfoWriter (src/logger.ts), the others by pino.
    expect(ours).toEqual(theirs);
    expect(JSON.parse(ours[0]!)).toMatchObject({
      reqId: 'r-1',
      trace_id: '0af7651916cd43dd8448eb211c80319c',
      parent_span_id: 'b7ad6b7169203331',
    });
  });

  it("writes a plain line as pino does, text needing escapes and a key-shaped value included, and only for the service's own logger", () => {
    const ours: string[] = [];
    const theirs: string[] = [];
    const fields = {
      reqId: 'r-2',
      url: `/v1/pets?q="a\\b"\t€&x=${'ask_'}${'A'.repeat(40)}`,
      statusCode: 404,
      responseTimeMs: 0.25,
      keyId: null,
    };
    plainInfoWriter(capturingLogger(ours))!({ ...fields, msg: 'request completed' });
    capturingLogger(theirs).info(fields, 'request completed');
    expect(ours).toEqual(theirs);
    expect(ours[0]).toContain('ask_[redacted]');
    expect(plainInfoWriter(pino())).toBeNull();
    // Quiet below info, as logger.info is (and probed only once it writes at info).
    const quiet: string[] = [];
    const warnOnly = createLogger({ logLevel: 'warn' }, { write: (line: string) => void quiet.push(line) });
    expect(plainInfoWriter(warnOnly)).toBeNull();
    warnOnly.level = 'info';
    plainInfoWriter(warnOnly)!({ msg: 'written' });
    warnOnly.level = 'warn';
    plainInfoWriter(warnOnly)!({ msg: 'not written' });
    expect(quiet.map((line) => JSON.parse(line).msg)).toEqual(['written']);
    // A child with bindings writes them: pino's way, not this one.
    expect(plainInfoWriter(capturingLogger([]).child({ reqId: 'r-3' }))).toBeNull();
  });

  it('is the way the running service writes its request line (through the child Fastify makes of its logger)', async () => {
    const lines: string[] = [];
    // pino's diagnostics channel: a start for every line pino builds itself.
    const built: string[] = [];
    const START = 'tracing:pino_asJson:start';
    const onStart = (message: unknown) => void built.push(String((message as { arguments: unknown[] }).arguments[1]));
    const server = await startTestServer({ logger: capturingLogger(lines) });
    subscribe(START, onStart);
    try {
      for (const path of ['/v1/pets?limit=2', '/trpc/pets.list?input=%7B%7D', '/v1/pets?limit=0']) {
        await (await server.request(path)).text();
      }
    } finally {
      unsubscribe(START, onStart);
      await server.close();
    }
    const completions = lines.map((line) => JSON.parse(line)).filter((line) => line.msg === 'request completed');
    expect(completions.map((line) => line.statusCode)).toEqual([200, 200, 400]);
    expect(built).not.toContain('request completed');
  });
});

describe("half-closing clients answered through Node's undocumented httpAllowHalfOpen (src/http/connections.ts)", () => {
  /** A plain node:http server answering 10 ms after the request: as a database call does. */
  async function lateAnswer(server: Server): Promise<string> {
    server.on('request', (_request, response) => void setTimeout(() => response.end('late'), 10));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as { port: number };
      return await halfClosedRequest(`http://127.0.0.1:${port}`, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }

  it("Node's own path still ends the connection at the client's FIN, losing the answer; with the setting it is sent", async () => {
    expect(await lateAnswer(createServer())).toBe('');
    const server = createServer();
    answerHalfClosedClients(server);
    expect(await lateAnswer(server)).toMatch(/^HTTP\/1\.1 200 OK[^]*late$/);
  });
});
