// Request logs: one JSON line per request with its id, W3C trace context, method, route pattern,
// status and duration, read from a real server's log output; never a credential. Trace headers are
// made and read by OpenTelemetry's own W3C propagator, the library callers' tracers use.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { context, defaultTextMapGetter, defaultTextMapSetter, ROOT_CONTEXT, trace, TraceFlags, type SpanContext } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger, LOG_BUFFER_BYTES, LOG_FLUSH_INTERVAL_MS } from '../src/logger.js';
import { API_KEY, json, startTestServer, type TestServer } from './support/test-server.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Everything the logger writes, as it was written. */
const output: string[] = [];
const capture = new Writable({
  write(chunk: Buffer, _encoding, done) {
    output.push(chunk.toString());
    done();
  },
});
const entries = () =>
  output
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

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

  it('names the client’s address and the key’s id (never the key), through a proxy too', async () => {
    await server.request('/v1/pets', { headers: { 'x-request-id': 'who-1' } });
    const [line] = await logOf('who-1');
    expect(line).toMatchObject({ client: '127.0.0.1', keyId: expect.stringMatching(/^env-[0-9a-f]{8}$/) });
    expect(JSON.stringify(line)).not.toContain(API_KEY);
    await server.request('/v1/pets', { headers: { 'x-request-id': 'who-2', authorization: '' } });
    expect((await logOf('who-2'))[0]).toMatchObject({ client: '127.0.0.1', keyId: null, statusCode: 401, refused: 'missing_key' });
    expect((await logOf('who-1'))[0]).not.toHaveProperty('refused');

    const proxied = await startTestServer({ config: { trustProxy: ['127.0.0.1'] }, logger: createLogger({ logLevel: 'info' }, capture) });
    try {
      for (const [id, forwarded, client] of [
        ['who-3', '[2001:db8::7]:443', '2001:db8::7'],
        ['who-4', '203.0.113.9:5000', '203.0.113.9'],
        ['who-5', 'not-an-address', '127.0.0.1'],
      ]) {
        await proxied.request('/v1/pets', { headers: { 'x-request-id': id!, 'x-forwarded-for': forwarded! } });
        expect((await logOf(id!))[0]).toMatchObject({ client });
      }
    } finally {
      await proxied.close();
    }
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

  it('redacts a key or an Authorization header wherever the logger is told of one', () => {
    const lines: string[] = [];
    const logger = createLogger({ logLevel: 'info' }, { write: (line: string) => void lines.push(line) });
    const secret = 'as-secret-0123456789abcdefghij';
    logger.info({ authorization: `Bearer ${secret}` }, 'a');
    logger.info({ headers: { authorization: `Bearer ${secret}` } }, 'b');
    logger.info({ req: { headers: { authorization: `Bearer ${secret}`, host: 'h' } } }, 'c');
    logger.info({ request: { headers: { authorization: `Bearer ${secret}` } } }, 'd');
    logger.info({ apiKey: secret, apiKeys: [secret], key: secret }, 'e');
    logger.info({ config: { apiKeys: [secret], port: 1 } }, 'f');
    logger.error({ err: { message: 'm', config: { headers: { authorization: `Bearer ${secret}` } } } }, 'g');
    expect(lines).toHaveLength(7);
    for (const line of lines) {
      expect(line).not.toContain(secret);
      expect(line).toContain('[redacted]');
    }
    expect(JSON.parse(lines[2]!).req.headers.host).toBe('h'); // only the credential goes
  });

  it("flushes through the destination's own flush, and calls back at once for one without", async () => {
    const flushed: string[] = [];
    const withFlush = { write: () => undefined, flush: (done: () => void) => void (flushed.push('destination'), done()) };
    await new Promise<void>((resolve) => createLogger({ logLevel: 'info' }, withFlush).flush(() => resolve()));
    await new Promise<void>((resolve) => createLogger({ logLevel: 'info' }, { write: () => undefined }).flush(() => resolve()));
    expect(flushed).toEqual(['destination']);
  });

  it('LOG_LEVEL above info leaves request lines out', () => {
    const quiet: string[] = [];
    const logger = createLogger({ logLevel: 'warn' }, { write: (line: string) => void quiet.push(line) });
    logger.info({ route: '/v1/pets' }, 'request completed');
    logger.warn('kept');
    expect(quiet.map((line) => JSON.parse(line).msg)).toEqual(['kept']);
  });
});

describe('request ids and keys in the log', () => {
  /** A key as `npm run keys` issues them (src/auth/api-keys.ts): never to be written to the log. */
  const issuedKey = `ask_${randomBytes(32).toString('base64url')}`;

  it('keeps a caller’s X-Request-Id only when it is a short token (at most 128 of A-Z a-z 0-9 . _ : -), else makes one', async () => {
    const kept = ['lb-7f3a:01.2', 'a'.repeat(128), '0af7651916cd43dd8448eb211c80319c'];
    for (const id of kept) {
      const response = await fetch(`${server.baseUrl}/healthz`, { headers: { 'x-request-id': id } });
      expect(response.headers.get('x-request-id')).toBe(id);
      await logOf(id);
    }
    const replaced = ['x'.repeat(15_000), 'a'.repeat(129), 'two words', 'quote"d', 'semi;colon', issuedKey, 'ünïcode'];
    for (const id of replaced) {
      const response = await fetch(`${server.baseUrl}/healthz`, { headers: { 'x-request-id': id } });
      const generated = response.headers.get('x-request-id')!;
      expect(generated).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      const [line] = await logOf(generated);
      expect(JSON.stringify(line).length).toBeLessThan(1_000); // a normal line, not 45 of them
    }
    const everything = output.join('');
    expect(everything).not.toContain('x'.repeat(200));
    expect(everything).not.toContain(issuedKey);
  });

  it('never writes a key-shaped value, or a credential query parameter, from the URL: the line shows where it was', async () => {
    const sent = [
      [`/v1/pets?api_key=${issuedKey}`, '/v1/pets?api_key=[redacted]'],
      [`/v1/pets?limit=1&access_token=${API_KEY}`, '/v1/pets?limit=1&access_token=[redacted]'],
      [`/v1/pets?name=${issuedKey}&limit=2`, '/v1/pets?name=ask_[redacted]&limit=2'],
      [`/v1/pets/${issuedKey}`, '/v1/pets/ask_[redacted]'],
      [`/v1/pets?q=${issuedKey.replace('_', '%5F')}`, '/v1/pets?q=ask_[redacted]'],
      [`/trpc/pets.list?input=%7B%22key%22%3A%22${issuedKey}%22%7D`, '/trpc/pets.list?input=%7B%22key%22%3A%22ask_[redacted]%22%7D'],
    ];
    for (const [index, [path, logged]] of sent.entries()) {
      await server.request(path!, { headers: { 'x-request-id': `query-key-${index}` } });
      expect((await logOf(`query-key-${index}`))[0]).toMatchObject({ url: logged });
    }
    const everything = output.join('');
    expect(everything).not.toContain(issuedKey);
    expect(everything).not.toContain(issuedKey.slice(4));
    expect(everything).not.toContain(API_KEY);
  });

  /** The key as a URL may carry it: percent-encoded all through or in part, hex in either case, encoded twice. */
  const hex = (character: string) => `%${character.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;
  const ENCODINGS: Array<[string, (key: string) => string]> = [
    ['fully encoded', (key) => [...key].map(hex).join('')],
    ['one character in the middle encoded', (key) => key.slice(0, 20) + hex(key[20]!) + key.slice(21)],
    ['the prefix encoded', (key) => [...'ask_'].map(hex).join('') + key.slice(4)],
    ['the prefix’s `s` encoded', (key) => `a${hex('s')}${key.slice(2)}`],
    ['the prefix’s `k` encoded, its `_` not', (key) => `as${hex('k')}${key.slice(3)}`],
    ['the prefix’s `_` encoded alone', (key) => `ask${hex('_')}${key.slice(4)}`],
    ['mixed-case hex', (key) => [...key].map((c, i) => (i % 2 ? hex(c).toLowerCase() : hex(c))).join('')],
    ['encoded twice', (key) => [...key].map((c) => `%25${hex(c).slice(1)}`).join('')],
    ['encoded three times, in capitals', (key) => [...key.toUpperCase()].map((c) => `%2525${hex(c).slice(1)}`).join('')],
  ];
  /** `text` percent-decoded until nothing changes (at most 4 times). */
  const decoded = (text: string) => {
    let current = text;
    for (let i = 0; i < 4; i++) current = current.replace(/%([0-9a-f]{2})/gi, (_, code: string) => String.fromCharCode(parseInt(code, 16)));
    return current;
  };

  it.each(ENCODINGS)('a key %s is redacted in the url, the path and a tRPC input', async (label, encode) => {
    const key = encode(issuedKey);
    const sent: Array<[string, string]> = [
      [`/v1/pets?q=${key}&limit=2`, '/v1/pets?q=ask_[redacted]&limit=2'],
      [`/v1/pets/${key}`, '/v1/pets/ask_[redacted]'],
      [`/trpc/pets.list?input=%7B%22key%22%3A%22${key}%22%7D`, '/trpc/pets.list?input=%7B%22key%22%3A%22ask_[redacted]%22%7D'],
      [
        `/trpc/pets.get,pets.get?batch=1&input=%7B%220%22%3A%7B%22petId%22%3A1%7D%2C%221%22%3A%7B%22key%22%3A%22${key}%22%7D%7D`,
        '/trpc/pets.get,pets.get?batch=1&input=%7B%220%22%3A%7B%22petId%22%3A1%7D%2C%221%22%3A%7B%22key%22%3A%22ask_[redacted]%22%7D%7D',
      ],
    ];
    const from = output.length;
    for (const [index, [path, logged]] of sent.entries()) {
      const id = `encoded-${ENCODINGS.findIndex(([name]) => name === label)}-${index}`;
      await server.request(path, { headers: { 'x-request-id': id } });
      expect((await logOf(id))[0]).toMatchObject({ url: logged });
    }
    const lines = decoded(output.slice(from).join('')).toLowerCase();
    expect(lines).not.toContain(issuedKey.slice(4, 20).toLowerCase());
    expect(lines).not.toContain(issuedKey.slice(-16).toLowerCase());
  });

  it.each(ENCODINGS)('a key %s is redacted in every field of a line: messages, headers, errors', (_label, encode) => {
    const key = encode(issuedKey);
    const lines: string[] = [];
    const logger = createLogger({ logLevel: 'info' }, { write: (line: string) => void lines.push(line) });
    logger.info({ headers: { referer: `https://example.com/?k=${key}` } }, 'a');
    logger.warn({ err: new Error(`rejected ${key}`) }, 'b');
    logger.info({ nested: { deeper: [key] } }, `told of ${key}`);
    for (const line of lines) {
      expect(decoded(line).toLowerCase()).not.toContain(issuedKey.slice(4, 20).toLowerCase());
      expect(decoded(line).toLowerCase()).not.toContain(issuedKey.slice(-16).toLowerCase());
      expect(line).toContain('ask_[redacted]');
    }
  });

  it('text that is not a key keeps its encodings: a short run, other characters, the prefix alone', () => {
    const lines: string[] = [];
    const logger = createLogger({ logLevel: 'info' }, { write: (line: string) => void lines.push(line) });
    const kept = [
      '%61%73%6B%5Fme',
      'ask%2Fabcdefghijklmnopqrstuvwxyz',
      '%7B%22ask%22%3A1%7D',
      '%61%73%6B%5F%2F%2F%2F%2F%2F%2F%2F%2F%2F%2F%2F%2F%2F%2F%2F%2F',
    ];
    for (const text of kept) logger.info({ url: `/v1/pets?q=${text}` }, 'kept');
    expect(lines.map((line) => JSON.parse(line).url)).toEqual(kept.map((text) => `/v1/pets?q=${text}`));
  });

  it('keeps a key-shaped value out of every field of every line the logger writes: messages, headers, errors', () => {
    const lines: string[] = [];
    const logger = createLogger({ logLevel: 'info' }, { write: (line: string) => void lines.push(line) });
    logger.info({ headers: { 'x-forwarded-authorization': `Bearer ${issuedKey}`, cookie: `session=${issuedKey}` } }, 'a');
    logger.warn({ err: new Error(`rejected ${issuedKey}`) }, 'b');
    logger.info({ nested: { deeper: [issuedKey.toUpperCase()] } }, `told of ${issuedKey}`);
    logger.child({ reqId: issuedKey }).info('d');
    logger.info({ shouted: issuedKey.toUpperCase() }, 'e'); // the only key on its line, in capitals
    expect(lines).toHaveLength(5);
    for (const line of lines) {
      expect(line.toLowerCase()).not.toContain(issuedKey.slice(4).toLowerCase());
      expect(line).toContain('ask_[redacted]');
      expect(() => JSON.parse(line)).not.toThrow();
    }
  });
});

const propagator = new W3CTraceContextPropagator();

/** The `traceparent` header OpenTelemetry sends for a span of the caller's. */
function callerTraceparent(flags = TraceFlags.SAMPLED): { header: string; caller: SpanContext } {
  const caller = { traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex'), traceFlags: flags, isRemote: false };
  const carrier: Record<string, string> = {};
  propagator.inject(trace.setSpanContext(context.active(), caller), carrier, defaultTextMapSetter);
  return { header: carrier.traceparent!, caller };
}

/** What OpenTelemetry reads from a `traceparent` header (undefined: not a valid one). */
function readByOpenTelemetry(header: string | null): SpanContext | undefined {
  if (header === null) return undefined;
  return trace.getSpanContext(propagator.extract(ROOT_CONTEXT, { traceparent: header }, defaultTextMapGetter));
}

describe('the log destination', () => {
  /** Runs `ending` after a process logged 200 lines with the service's logger; the lines that reached its stdout. */
  async function linesOutAfter(ending: string): Promise<number[]> {
    return (await textOutAfter(ending)).map((line) => (JSON.parse(line) as { line: number }).line);
  }
  /** The same, each line as written (without its newline). */
  async function textOutAfter(ending: string, message = 'last words'): Promise<string[]> {
    const script = [
      "const { createLogger } = await import('./src/logger.ts');",
      "const logger = createLogger({ logLevel: 'info' });",
      `for (let line = 0; line < 200; line++) logger.info({ line }, ${JSON.stringify(message)});`,
      ending,
    ].join('\n');
    const stdout = await new Promise<string>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT }, (_error, out) => resolve(out));
    });
    return stdout.split('\n').filter((line) => line !== '');
  }
  const ALL = Array.from({ length: 200 }, (_, line) => line);

  it('stdout, written at least every LOG_FLUSH_INTERVAL_MS: a process killed outright after that has lost no line', async () => {
    expect(await linesOutAfter(`setTimeout(() => process.kill(process.pid, 'SIGKILL'), 3 * ${LOG_FLUSH_INTERVAL_MS});`)).toEqual(ALL);
  });

  it('a process that exits in the middle of a turn writes the lines it logged first', async () => {
    expect(await linesOutAfter('process.exit(3);')).toEqual(ALL);
  });

  it('a graceful stop (SIGTERM, handled as src/main.ts does) writes every line logged before it', async () => {
    expect(await linesOutAfter("process.on('SIGTERM', () => process.exit(0)); process.kill(process.pid, 'SIGTERM');")).toEqual(ALL);
  });

  it('writes text beyond ASCII whole: lines are batched as UTF-8 bytes, so no character is cut at a batch boundary', async () => {
    const message = 'Fluffy 🐕 ünïcødé 名前';
    const written = await textOutAfter('process.exit(0);', message);
    expect(written.map((line) => JSON.parse(line) as { line: number; msg: string })).toEqual(
      ALL.map((line) => expect.objectContaining({ line, msg: message })),
    );
  });

  it('killed outright at once, a process loses only its last lines, under LOG_BUFFER_BYTES of them, and each whole', async () => {
    const written = await textOutAfter("process.kill(process.pid, 'SIGKILL');");
    const out = written.map((line) => (JSON.parse(line) as { line: number }).line); // each a whole JSON line
    expect(out.length).toBeGreaterThan(0);
    expect(out).toEqual(ALL.slice(0, out.length)); // in order, from the first
    // The lost lines are at least as long as the shortest written one (line numbers only grow).
    const shortest = Math.min(...written.map((line) => Buffer.byteLength(line) + 1));
    expect((ALL.length - out.length) * shortest).toBeLessThan(LOG_BUFFER_BYTES);
  });
});

describe('W3C trace context', () => {
  it("continues the caller's trace: same trace id, a span of its own with the caller's as parent, in the log and the response", async () => {
    const { header, caller } = callerTraceparent();
    const response = await server.request('/v1/pets?limit=1', { headers: { traceparent: header, 'x-request-id': 'trace-ctx-1' } });
    expect(response.status).toBe(200);
    const answered = readByOpenTelemetry(response.headers.get('traceparent'));
    expect(answered).toMatchObject({ traceId: caller.traceId, traceFlags: TraceFlags.SAMPLED, isRemote: true });
    expect(answered!.spanId).not.toBe(caller.spanId);

    const [line] = await logOf('trace-ctx-1');
    expect(line).toMatchObject({
      trace_id: caller.traceId,
      span_id: answered!.spanId,
      parent_span_id: caller.spanId,
      route: '/v1/pets',
    });
  });

  it('keeps an unsampled caller unsampled', async () => {
    const { header, caller } = callerTraceparent(TraceFlags.NONE);
    const response = await fetch(`${server.baseUrl}/healthz`, { headers: { traceparent: header } });
    expect(readByOpenTelemetry(response.headers.get('traceparent'))).toMatchObject({
      traceId: caller.traceId,
      traceFlags: TraceFlags.NONE,
    });
  });

  it('starts a new trace when the caller sends none, a different one per request (tRPC too)', async () => {
    const first = await fetch(`${server.baseUrl}/trpc/pets.list`, {
      headers: { authorization: `Bearer ${API_KEY}`, 'x-request-id': 'trace-new-1' },
    });
    const second = await fetch(`${server.baseUrl}/trpc/pets.list`, { headers: { authorization: `Bearer ${API_KEY}` } });
    const started = readByOpenTelemetry(first.headers.get('traceparent'));
    expect(started).toMatchObject({ traceFlags: TraceFlags.NONE, isRemote: true });
    expect(readByOpenTelemetry(second.headers.get('traceparent'))!.traceId).not.toBe(started!.traceId);

    const [line] = await logOf('trace-new-1');
    expect(line).toMatchObject({ trace_id: started!.traceId, span_id: started!.spanId, route: '/trpc/pets.list' });
    expect(line).not.toHaveProperty('parent_span_id');
  });

  const VALID = '0af7651916cd43dd8448eb211c80319c';
  it.each([
    ['upper-case hex', `00-${VALID.toUpperCase()}-B7AD6B7169203331-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-b7ad6b7169203331-01`],
    ['an all-zero parent id', `00-${VALID}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${VALID}-b7ad6b7169203331-01`],
    ['version 00 with a fifth field', `00-${VALID}-b7ad6b7169203331-01-extra`],
    ['a short flags field', `00-${VALID}-b7ad6b7169203331-1`],
    ['a short trace id', `00-${VALID.slice(1)}-b7ad6b7169203331-01`],
    ['no dashes', `00${VALID}b7ad6b716920333101`],
    ['text', 'not a trace'],
  ])('starts a new trace when traceparent has %s, as OpenTelemetry ignores it', async (description, header) => {
    expect(readByOpenTelemetry(header)).toBeUndefined();
    const requestId = `trace-bad-${description.replaceAll(' ', '-')}`;
    const response = await fetch(`${server.baseUrl}/healthz`, { headers: { traceparent: header, 'x-request-id': requestId } });
    const answered = readByOpenTelemetry(response.headers.get('traceparent'));
    expect(answered).toBeDefined();
    expect(answered!.traceId).not.toBe(VALID);
    const [line] = await logOf(requestId);
    expect(line).toMatchObject({ trace_id: answered!.traceId });
    expect(line).not.toHaveProperty('parent_span_id');
  });

  it("accepts exactly the headers OpenTelemetry's propagator accepts, and continues the same trace", async () => {
    const hex = (length: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: length, maxLength: length });
    const nearlyValid = fc
      .tuple(
        fc.oneof(fc.constant('00'), fc.constant('01'), fc.constant('ff'), hex(2)),
        fc.oneof(hex(32), fc.constant('0'.repeat(32)), hex(31)),
        fc.oneof(hex(16), fc.constant('0'.repeat(16)), hex(17)),
        fc.oneof(hex(2), hex(1)),
        fc.oneof(
          fc.constant(''),
          fc.constant('-'),
          fc.string({ maxLength: 8 }).map((rest) => `-${rest.replace(/[^\x21-\x7e]/g, '')}`),
        ),
      )
      .map(([version, traceId, spanId, flags, rest]) => `${version}-${traceId}-${spanId}-${flags}${rest}`);
    await fc.assert(
      fc.asyncProperty(nearlyValid, async (header) => {
        const expected = readByOpenTelemetry(header);
        const response = await fetch(`${server.baseUrl}/healthz`, { headers: { traceparent: header } });
        const answered = readByOpenTelemetry(response.headers.get('traceparent'));
        expect(answered).toBeDefined();
        if (expected) expect(answered!.traceId).toBe(expected.traceId);
        else expect(header).not.toContain(answered!.traceId);
      }),
      { numRuns: 200 },
    );
  });
});

describe('every log line of a request', () => {
  it('carries its request id and trace context, not only the last one', async () => {
    const lines: string[] = [];
    const failing = await startTestServer({
      logger: createLogger({ logLevel: 'debug' }, { write: (line: string) => void lines.push(line) }),
    });
    try {
      await failing.database.close(); // /readyz now fails, and logs why (at debug) before its request line
      const { header, caller } = callerTraceparent();
      const response = await fetch(`${failing.baseUrl}/readyz`, { headers: { traceparent: header, 'x-request-id': 'trace-lines' } });
      expect(response.status).toBe(503);
      const ours = await vi.waitFor(() => {
        const found = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.reqId === 'trace-lines');
        expect(found.map((entry) => entry.msg)).toEqual(['readiness probe: the database did not answer', 'request completed']);
        return found;
      });
      const spanId = readByOpenTelemetry(response.headers.get('traceparent'))!.spanId;
      for (const entry of ours) expect(entry).toMatchObject({ trace_id: caller.traceId, span_id: spanId, parent_span_id: caller.spanId });
    } finally {
      await failing.close();
    }
  });
});
