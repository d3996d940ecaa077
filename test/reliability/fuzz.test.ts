// Property-based fuzzing of the REST surface: thousands of generated requests with
// hostile strings, huge and negative numbers, wrong types, deep nesting, odd and duplicated
// headers, odd methods and paths. Whatever comes in: only documented statuses, every error in the
// envelope, never a 5xx or a trace of internals, the server alive and its data intact.
import { request } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NewPet, Pet } from '../../src/domain/pet-schemas.js';
import { API_KEY, OTHER_API_KEY, startTestServer, type TestServer } from '../support/test-server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ config: { bodyLimitBytes: 16 * 1024 } });
  for (const name of ['Seed one', 'Seed two']) await server.post('/v1/pets', { name, categoryId: 1 });
});
afterAll(() => server.close());

const DOCUMENTED = new Set([200, 201, 400, 401, 404, 405, 413, 415, 422, 429, 431]);
const INTERNALS = /\bat .+:\d+:\d+|node_modules|prisma|TRPCError|ZodError|stack|SQLITE|undefined is not/i;

interface Sent {
  method: string;
  path: string;
  headers: Record<string, string | string[]>;
  body?: string;
}
interface Received {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

function send({ method, path, headers, body }: Sent): Promise<Received> {
  const url = new URL(server.baseUrl);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on('error', reject);
    // A hang is a failure too: no request may go unanswered.
    req.setTimeout(5_000, () => req.destroy(new Error(`no answer within 5 s to ${method} ${path.slice(0, 200)}`)));
    if (body !== undefined) req.setHeader('content-length', Buffer.byteLength(body));
    req.end(body);
  });
}

// ---- what a hostile client sends ---------------------------------------------------------------
const ESCAPED = Array.from({ length: 256 }, (_, byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`);
/**
 * Percent-encodes every byte outside visible ASCII (lone surrogates too, as UTF-8 writes them,
 * which encodeURIComponent refuses). Byte by byte over the whole UTF-8 text at once: the bytes
 * 0x21-0x7e are exactly those characters, every other byte belongs to a character outside them.
 */
const percentEncode = (text: string) =>
  Buffer.from(text, 'utf8')
    .toString('latin1')
    .replace(/[^\x21-\x7e]/g, (byte) => ESCAPED[byte.charCodeAt(0)]!);

const hostileString = fc.oneof(
  // size 'max' with a bound: long strings as often as short ones (an unbounded 'max' runs out of memory).
  fc.string({ size: 'max', unit: 'binary', maxLength: 3_000 }),
  fc.string({ size: 'max', unit: 'grapheme', maxLength: 300 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\n',
    '\uFFFF',
    '\uD800',
    '🐕'.repeat(60),
    'a'.repeat(101),
    "'; DROP TABLE pets; --",
    '<script>',
    '%00',
    '../..',
  ),
);
const hostileNumber = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: false }),
  fc.constantFrom(0, -1, 1.5, 2 ** 53, 2 ** 53 + 2, -(2 ** 63), 1e308, Number.MAX_SAFE_INTEGER, Number.MIN_VALUE),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((n) => Number(n)),
);
const anyJsonValue = fc.oneof(hostileString, hostileNumber, fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 4 }));
const deepNesting = fc.integer({ min: 10, max: 5_000 }).map((depth) => `${'['.repeat(depth)}1${']'.repeat(depth)}`);
const petLike = fc.record(
  {
    name: anyJsonValue,
    categoryId: fc.oneof(hostileNumber, anyJsonValue),
    status: fc.oneof(fc.constantFrom('available', 'pending', 'sold', 'SOLD', ''), anyJsonValue),
    id: anyJsonValue,
    extra: anyJsonValue,
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  petLike.map((value) => JSON.stringify(value)),
  fc
    .record({ name: fc.string({ minLength: 1, maxLength: 100 }), categoryId: fc.integer({ min: 1 }) })
    .map((value) => JSON.stringify(value)),
  fc.jsonValue({ maxDepth: 6 }).map((value) => JSON.stringify(value)),
  deepNesting,
  hostileString,
  fc.constantFrom('', '{', '{"name":"x",}', 'null', '[]', '"str"', '1e999', '{"name":"x","categoryId":1}{"name":"y"}'),
  fc.string({ minLength: 16_000, maxLength: 20_000 }).map((s) => JSON.stringify({ name: s, categoryId: 1 })),
);
const segment = fc.oneof(
  fc.webSegment(),
  hostileString.map(percentEncode),
  fc.constantFrom('..', '.', '%2e%2e', '%00', '%ZZ', '0', '-1', '1', '9007199254740993', '1e3', '0x1f', ' 1'),
);
const path = fc.oneof(
  fc.constantFrom('/v1/pets', '/v1/pets/', '/v1/pets/1', '/v1/pets/2', '/v1/openapi.json', '/v1', '/'),
  segment.map((s) => `/v1/pets/${s}`),
  fc.array(segment, { minLength: 1, maxLength: 5 }).map((parts) => `/v1/${parts.join('/')}`),
  fc.array(segment, { minLength: 1, maxLength: 3 }).map((parts) => `/${parts.join('/')}`),
);
const queryValue = fc.oneof(
  hostileString.map(percentEncode),
  hostileNumber.map(String),
  fc.constantFrom('', '20', '100', '101', 'available', 'sold'),
);
const query = fc
  .array(fc.tuple(fc.constantFrom('limit', 'status', 'limit', 'status', 'offset', 'petId', '__proto__', 'constructor'), queryValue), {
    maxLength: 4,
  })
  .map((pairs) => (pairs.length ? `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}` : ''));
const headerText = fc.string({ unit: fc.constantFrom(...'abcXYZ019 -_.,;=/"\'()[]{}~!@#$%^&*+:?'.split('')), maxLength: 80 });
const authorization = fc.oneof(
  fc.constant(`Bearer ${API_KEY}`),
  fc.constant(`bearer ${OTHER_API_KEY}`),
  fc.constant(undefined),
  headerText,
  headerText.map((t) => `Bearer ${t}`),
  fc.constant([`Bearer ${API_KEY}`, 'Bearer wrong-wrong-wrong-wrong'] as string[]),
);
const contentType = fc.oneof(
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'APPLICATION/JSON',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/xml',
    'application/json; charset=latin1',
  ),
  fc.constant(undefined),
  headerText,
  fc.constant(['application/json', 'text/plain'] as string[]),
);
const requestArb = fc
  .record({
    method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'GET', 'POST', 'POST'),
    path,
    query,
    authorization,
    contentType,
    idempotencyKey: fc.option(fc.oneof(headerText, fc.constantFrom('k1', 'k2', '"k1"')), { nil: undefined }),
    requestId: fc.option(headerText, { nil: undefined }),
    body: fc.option(body, { nil: undefined }),
  })
  .map(({ method, path, query, authorization, contentType, idempotencyKey, requestId, body }): Sent => {
    const headers: Record<string, string | string[]> = {};
    if (authorization !== undefined) headers.authorization = authorization;
    if (contentType !== undefined) headers['content-type'] = contentType;
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    if (requestId !== undefined) headers['x-request-id'] = requestId;
    // What a raw client can put on the wire: anything outside visible ASCII goes percent-encoded.
    const target = percentEncode(path + query);
    return { method, path: target, headers, body: method === 'GET' || method === 'HEAD' ? undefined : body };
  });

describe('fuzzing the REST surface', () => {
  it('answers 2,500 generated requests with documented statuses and envelopes only, and loses nothing', async () => {
    let created = 0;
    let requests = 0;
    await fc.assert(
      fc.asyncProperty(requestArb, async (sent) => {
        requests++;
        const received = await send(sent);
        expect(DOCUMENTED.has(received.status), `${received.status} for ${JSON.stringify(sent).slice(0, 300)}`).toBe(true);
        if (sent.method === 'HEAD') return;
        if (received.status >= 400) {
          expect(received.text).not.toMatch(INTERNALS);
          const envelope = JSON.parse(received.text);
          expect(Object.keys(envelope).sort()).toEqual(['code', 'message', 'status']);
          expect(envelope.status).toBe(received.status);
        } else if (received.status === 201) {
          expect(Pet.safeParse(JSON.parse(received.text)).success).toBe(true);
          if (received.headers['idempotent-replayed'] !== 'true') created++;
        }
      }),
      // endOnFailure: report the first counterexample as found; shrinking long bodies takes minutes.
      {
        numRuns: Number(process.env.FUZZ_RUNS ?? 2_500),
        endOnFailure: true,
        seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31),
        verbose: 1,
      },
    );
    expect(requests).toBeGreaterThanOrEqual(2_500);

    // Alive, and every stored pet is one that was acknowledged, valid as the schema says.
    const alive = await server.request('/v1/pets?limit=1');
    expect(alive.status).toBe(200);
    const rows = await server.database.prisma.pet.findMany();
    expect(rows).toHaveLength(2 + created);
    for (const row of rows) {
      expect(NewPet.safeParse({ name: row.name, categoryId: Number(row.categoryId), status: row.status }).success).toBe(true);
    }
  }, 120_000);
});
