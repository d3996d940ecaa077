// The /trpc surface against tRPC's own Fastify adapter, request by request. The service
// answers the common call itself (src/http/trpc-plugin.ts, through src/api/trpc-internals.ts);
// here a battery of raw requests goes to the service and to the same router served by tRPC's stock
// `fastifyTRPCPlugin` with the same context and handler options, both real HTTP servers on
// databases of the same kind, and every status, body and header a client reads must be equal,
// except the differences listed below, each with its reason. A tRPC upgrade that changes the wire
// format, or a change of ours that drifts from it, fails here.
import { request as httpRequest } from 'node:http';
import { fastifyTRPCPlugin } from '@trpc/server/adapters/fastify';
import Fastify from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trpcInternals, TrpcInternalsError } from '../src/api/trpc-internals.js';
import { appRouter } from '../src/api/root-router.js';
import { createContextFactory } from '../src/app.js';
import { createApiKeyStore } from '../src/auth/api-key-store.js';
import { createApiKeyVerifier } from '../src/auth/api-keys.js';
import { parseConfig } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/database.js';
import { authentication } from '../src/http/call-pipeline.js';
import { MAX_PARAM_LENGTH } from '../src/http/request-head-limits.js';
import { requestLogController } from '../src/http/request-record.js';
import { trpcHandlerOptions } from '../src/http/trpc-plugin.js';
import { createRequestLimits } from '../src/limits/request-limiters.js';
import { StorageHealth } from '../src/db/storage-health.js';
import { createMigratedTestDatabase, type TestDatabase } from './support/test-database.js';
import { API_KEY, startTestServer, TEST_CONFIG, type TestServer } from './support/test-server.js';

/** The reference: tRPC's stock plugin in a plain Fastify, with our authentication hook and context. */
async function startReference() {
  const testDatabase: TestDatabase = await createMigratedTestDatabase();
  const database: Database = await openDatabase(parseConfig({ DATABASE_URL: testDatabase.url }));
  const app = Fastify({
    loggerInstance: pino({ level: 'silent' }),
    // The service's log controller: it gives each request its decisions (`request.call`) on arrival.
    logController: requestLogController(),
    bodyLimit: TEST_CONFIG.bodyLimitBytes,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
  });
  const limits = await createRequestLimits(TEST_CONFIG);
  app.addHook('onClose', () => limits.close());
  await app.register(authentication, {
    verifier: createApiKeyVerifier({
      envKeys: TEST_CONFIG.apiKeys,
      store: createApiKeyStore(database.prisma, { sqlite: database.sqlite }),
    }),
    failureLimiter: limits.authFailures,
  });
  const createContext = createContextFactory(TEST_CONFIG, database, { keyRateLimiter: limits.perKey, storage: new StorageHealth() });
  await app.register(fastifyTRPCPlugin, { prefix: '/trpc', trpcOptions: trpcHandlerOptions(appRouter, createContext) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return {
    baseUrl: `http://127.0.0.1:${address.port}`,
    async close() {
      await app.close();
      await database.close();
      await testDatabase.drop();
    },
  };
}

interface WireRequest {
  label: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

interface WireAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A raw HTTP request (node:http: any method, any header, bodies as given), and the whole answer. */
function send(baseUrl: string, request: WireRequest): Promise<WireAnswer> {
  return new Promise((resolve, reject) => {
    const url = new URL(baseUrl);
    const headers: Record<string, string> = { authorization: `Bearer ${API_KEY}`, ...request.headers };
    if (headers.authorization === '') delete headers.authorization;
    const req = httpRequest({ method: request.method, host: url.hostname, port: url.port, path: request.path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          headers: Object.fromEntries(Object.entries(res.headers).map(([name, value]) => [name, String(value)])),
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('error', reject);
    if (request.body !== undefined) req.setHeader('content-length', Buffer.byteLength(request.body));
    req.end(request.body);
  });
}

/**
 * The headers a tRPC client (or a program reading the answer) reads, but the per-key ones: the
 * service counts a call at admission, before its body is read (a body or input that is not JSON
 * counts too: docs/security.md), tRPC's adapter with our middleware only calls that reach it; so
 * the counts drift apart, and those headers are checked on their own (`perKeyHeadersHold`).
 */
const READ_HEADERS = ['content-type', 'vary', 'deprecation', 'sunset', 'link', 'retry-after', 'allow', 'idempotent-replayed'];

/** Wherever the reference sends the per-key headers, ours does too, with the same policy. */
function perKeyHeadersHold(mine: WireAnswer, theirs: WireAnswer): void {
  if (theirs.headers['ratelimit-policy'] === undefined) return;
  expect(mine.headers['ratelimit-policy']).toBe(theirs.headers['ratelimit-policy']);
  expect(mine.headers.ratelimit).toMatch(/^"per-key";r=\d+;t=\d+$/);
}

function comparable(answer: WireAnswer) {
  const headers: Record<string, string> = {};
  for (const name of READ_HEADERS) {
    const value = answer.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  // A streamed (jsonl) answer sends each call's line when it is ready: the order of lines may differ.
  const body = answer.headers['content-type'] === 'application/jsonl' ? answer.body.split('\n').sort() : answer.body;
  return { status: answer.status, headers, body };
}

// ---------------------------------------------------------------------------------------------
// The battery.

const q = (value: unknown) => encodeURIComponent(JSON.stringify(value));
const JSON_TYPE = { 'content-type': 'application/json' };
const NO_KEY = { authorization: '' };

function get(label: string, path: string, headers?: Record<string, string>): WireRequest {
  return { label, method: 'GET', path, headers };
}
function post(label: string, path: string, body: string | undefined, headers: Record<string, string> = JSON_TYPE): WireRequest {
  return { label, method: 'POST', path, body, headers };
}

const newPet = (name: string, categoryId = 1) => JSON.stringify({ name, categoryId });

const battery: WireRequest[] = [
  // Data to read: three pets (ids 1, 2, 3 on both servers).
  post('create a pet', '/trpc/pets.create', newPet('Rex', 3)),
  post('create with a status', '/trpc/pets.create', JSON.stringify({ name: 'Bella', categoryId: 2, status: 'sold' })),
  post('create, batch of 1', '/trpc/pets.create?batch=1', JSON.stringify({ 0: { name: 'Tom', categoryId: 1 } })),

  // Single queries, GET.
  get('list, no input', '/trpc/pets.list'),
  get('list, empty input', '/trpc/pets.list?input='),
  get('list, {}', `/trpc/pets.list?input=${q({})}`),
  get('list, limit', `/trpc/pets.list?input=${q({ limit: 2 })}`),
  get('list, status', `/trpc/pets.list?input=${q({ status: 'sold' })}`),
  get('list, limit 0', `/trpc/pets.list?input=${q({ limit: 0 })}`),
  get('list, limit as a string', `/trpc/pets.list?input=${q({ limit: '2' })}`),
  get('list, unknown status', `/trpc/pets.list?input=${q({ status: 'lost' })}`),
  get('list, unicode status', `/trpc/pets.list?input=${q({ status: 'sölð 🐕' })}`),
  get('list, null input', `/trpc/pets.list?input=null`),
  get('list, array input', `/trpc/pets.list?input=${q([1])}`),
  get('list, string input', `/trpc/pets.list?input=${q('x')}`),
  get('list, number input', `/trpc/pets.list?input=42`),
  get('list, invalid JSON', `/trpc/pets.list?input=%7B`),
  get('list, unknown field', `/trpc/pets.list?input=${q({ limit: 1, colour: 'brown' })}`),
  get('list, input twice', `/trpc/pets.list?input=${q({ limit: 1 })}&input=${q({ limit: 2 })}`),
  get('list, input twice, first invalid', `/trpc/pets.list?input=%7B&input=${q({ limit: 2 })}`),
  get('list, encoded percent sign in input', `/trpc/pets.list?input=${q({ status: '100%' })}`),
  get('list, plus signs in input', `/trpc/pets.list?input={"status":"a+b"}`),
  get('list, BOM before input', `/trpc/pets.list?input=%EF%BB%BF${q({ limit: 1 })}`),
  get('list, malformed percent-encoding in input', `/trpc/pets.list?input=%E0%A4%A`),
  get('list, other query parameters', `/trpc/pets.list?input=${q({ limit: 1 })}&x=1`),
  get('get', `/trpc/pets.get?input=${q({ petId: 1 })}`),
  get('get, unknown id', `/trpc/pets.get?input=${q({ petId: 987654 })}`),
  get('get, id as a string', `/trpc/pets.get?input=${q({ petId: '1' })}`),
  get('get, id not an integer', `/trpc/pets.get?input=${q({ petId: 1.5 })}`),
  get('get, id past 2^53', `/trpc/pets.get?input=9007199254740993`.replace('9007199254740993', q({ petId: 2 ** 53 + 2 }))),
  get('get, no input', '/trpc/pets.get'),
  get('get, {}', `/trpc/pets.get?input=${q({})}`),
  get('get, with a JSON content type', `/trpc/pets.get?input=${q({ petId: 1 })}`, JSON_TYPE),
  get('get, with a text content type', `/trpc/pets.get?input=${q({ petId: 1 })}`, { 'content-type': 'text/plain' }),
  get('get, no key', `/trpc/pets.get?input=${q({ petId: 1 })}`, NO_KEY),
  get('list, no key', '/trpc/pets.list', NO_KEY),
  get('list, wrong key', '/trpc/pets.list', { authorization: 'Bearer wrong-key-0123456789abcdef' }),
  get('list, Basic scheme', '/trpc/pets.list', { authorization: `Basic ${Buffer.from(`u:${API_KEY}`).toString('base64')}` }),
  get('get, no key, invalid input', `/trpc/pets.get?input=%7B`, NO_KEY),
  get('list, percent-encoded procedure name', `/trpc/pets.%6Cist`),
  get('list, undecodable procedure name', `/trpc/pets.list%ZZ`),

  // Single mutations, POST.
  post('create, unicode name', '/trpc/pets.create', newPet('Ünïcødé 🐈‍⬛ שלום 名前')),
  post('create, combining characters', '/trpc/pets.create', newPet('e\u0301\u0301')),
  post('create, control character', '/trpc/pets.create', newPet('a\u0000b')),
  post('create, blank name', '/trpc/pets.create', newPet('   ')),
  post('create, empty name', '/trpc/pets.create', newPet('')),
  post('create, name too long', '/trpc/pets.create', newPet('x'.repeat(101))),
  post('create, extra field', '/trpc/pets.create', JSON.stringify({ name: 'X', categoryId: 1, id: 7 })),
  post('create, {}', '/trpc/pets.create', '{}'),
  post('create, null', '/trpc/pets.create', 'null'),
  post('create, array', '/trpc/pets.create', '[]'),
  post('create, string', '/trpc/pets.create', '"x"'),
  post('create, invalid JSON', '/trpc/pets.create', '{"name":'),
  post('create, empty body', '/trpc/pets.create', ''),
  post('create, no body', '/trpc/pets.create', undefined),
  post('create, BOM before the body', '/trpc/pets.create', `\uFEFF${newPet('Bom')}`),
  post('create, two BOMs', '/trpc/pets.create', `\uFEFF\uFEFF${newPet('Bom')}`),
  post('create, three BOMs', '/trpc/pets.create', `\uFEFF\uFEFF\uFEFF${newPet('Bom')}`),
  post('create, whitespace around the body', '/trpc/pets.create', `\n ${newPet('Spaced')} \n`),
  post('create, charset utf-8', '/trpc/pets.create', newPet('Charset'), { 'content-type': 'application/json; charset=utf-8' }),
  post('create, charset UTF-8 no space', '/trpc/pets.create', newPet('Charset2'), { 'content-type': 'application/json;charset=UTF-8' }),
  post('create, media type in capitals', '/trpc/pets.create', newPet('Caps'), { 'content-type': 'Application/JSON' }),
  post('create, charset latin-1', '/trpc/pets.create', newPet('Latin'), { 'content-type': 'application/json; charset=iso-8859-1' }),
  post('create, text/plain', '/trpc/pets.create', newPet('Plain'), { 'content-type': 'text/plain' }),
  post('create, no content type', '/trpc/pets.create', newPet('Untyped'), {}),
  post('create, form content type', '/trpc/pets.create', 'name=x', { 'content-type': 'application/x-www-form-urlencoded' }),
  post('create, XML', '/trpc/pets.create', '<pet/>', { 'content-type': 'application/xml' }),
  post('create, JSON-ish vendor type', '/trpc/pets.create', newPet('Vendor'), { 'content-type': 'application/vnd.api+json' }),
  post('create, no key', '/trpc/pets.create', newPet('Mallory'), { ...JSON_TYPE, ...NO_KEY }),
  post('create, no key, invalid JSON', '/trpc/pets.create', '{', { ...JSON_TYPE, ...NO_KEY }),
  post('create, Idempotency-Key', '/trpc/pets.create', newPet('Once'), { ...JSON_TYPE, 'idempotency-key': 'wire-1' }),
  post('create, Idempotency-Key replayed', '/trpc/pets.create', newPet('Once'), { ...JSON_TYPE, 'idempotency-key': 'wire-1' }),
  post('create, Idempotency-Key reused with another body', '/trpc/pets.create', newPet('Twice'), {
    ...JSON_TYPE,
    'idempotency-key': 'wire-1',
  }),
  post('create, Idempotency-Key not visible ASCII', '/trpc/pets.create', newPet('Key'), { ...JSON_TYPE, 'idempotency-key': 'a b' }),
  post('create, categoryId 1.0 (an integer)', '/trpc/pets.create', '{"name":"One","categoryId":1.0}'),
  post('create, categoryId 1e1 (an integer)', '/trpc/pets.create', '{"name":"Ten","categoryId":1e1}'),
  post('create, categoryId 1.5', '/trpc/pets.create', '{"name":"Half","categoryId":1.5}'),
  post('create, a __proto__ key', '/trpc/pets.create', '{"name":"Proto","categoryId":1,"__proto__":{"polluted":true}}'),
  post('create, batch of 2, categoryId 2.0', '/trpc/pets.create,pets.create?batch=1', '{"0":{"name":"Two","categoryId":2.0},"1":{}}'),
  post('create, a large body under the limit', '/trpc/pets.create', JSON.stringify({ name: 'x'.repeat(60_000), categoryId: 1 })),
  post('create, a body over the limit', '/trpc/pets.create', JSON.stringify({ name: 'x'.repeat(70_000), categoryId: 1 })),

  // Batches of 1 and 2.
  get('list, batch of 1', `/trpc/pets.list?batch=1&input=${q({ 0: { limit: 1 } })}`),
  get('list, batch of 1, no input', '/trpc/pets.list?batch=1'),
  get('list, batch of 1, input without "0"', `/trpc/pets.list?batch=1&input=${q({ 1: { limit: 1 } })}`),
  get('list, batch of 1, array input', `/trpc/pets.list?batch=1&input=${q([{ limit: 1 }])}`),
  get('list, batch of 1, null input', '/trpc/pets.list?batch=1&input=null'),
  get('list, batch of 1, invalid JSON', '/trpc/pets.list?batch=1&input=%7B'),
  get('get, batch of 1, unknown id', `/trpc/pets.get?batch=1&input=${q({ 0: { petId: 987654 } })}`),
  get('get, batch of 1, no key', `/trpc/pets.get?batch=1&input=${q({ 0: { petId: 1 } })}`, NO_KEY),
  post('create, batch of 1, invalid', '/trpc/pets.create?batch=1', JSON.stringify({ 0: { name: '' } })),
  post('create, batch of 1, array body', '/trpc/pets.create?batch=1', JSON.stringify([{ name: 'A', categoryId: 1 }])),
  post('create, batch of 1, BOM', '/trpc/pets.create?batch=1', `\uFEFF${JSON.stringify({ 0: { name: 'Bom1', categoryId: 1 } })}`),
  get('batch of 2: list and get', `/trpc/pets.list,pets.get?batch=1&input=${q({ 0: { limit: 1 }, 1: { petId: 1 } })}`),
  get('batch of 2: one fails', `/trpc/pets.get,pets.get?batch=1&input=${q({ 0: { petId: 1 }, 1: { petId: 987654 } })}`),
  get('batch of 2: both fail differently', `/trpc/pets.get,pets.list?batch=1&input=${q({ 0: { petId: 987654 }, 1: { limit: 0 } })}`),
  get('batch of 2: no key', `/trpc/pets.list,pets.get?batch=1&input=${q({ 1: { petId: 1 } })}`, NO_KEY),
  post(
    'batch of 2: creates',
    '/trpc/pets.create,pets.create?batch=1',
    JSON.stringify({ 0: { name: 'B1', categoryId: 1 }, 1: { name: '', categoryId: 1 } }),
  ),
  post(
    'batch of 2: query and mutation mixed',
    '/trpc/pets.list,pets.create?batch=1',
    JSON.stringify({ 1: { name: 'Mix', categoryId: 1 } }),
  ),
  get('batch param 0', `/trpc/pets.list?batch=0&input=${q({ limit: 1 })}`),
  get('batch param true', `/trpc/pets.list?batch=true&input=${q({ limit: 1 })}`),
  get('batch param twice', `/trpc/pets.list?batch=1&batch=1&input=${q({ 0: { limit: 1 } })}`),

  // Batches of 60.
  get(
    'batch of 60 queries, mixed',
    `/trpc/${Array.from({ length: 60 }, (_, i) => (i % 2 ? 'pets.get' : 'pets.list')).join(',')}?batch=1&input=${q(
      Object.fromEntries(Array.from({ length: 60 }, (_, i) => [i, i % 2 ? { petId: (i % 7) + 1 } : { limit: (i % 4) + 1 }])),
    )}`,
  ),
  post(
    'batch of 60 creates, no key',
    `/trpc/${Array(60).fill('pets.create').join(',')}?batch=1`,
    JSON.stringify(Object.fromEntries(Array.from({ length: 60 }, (_, i) => [i, { name: `Keyless ${i}`, categoryId: 1 }]))),
    { ...JSON_TYPE, ...NO_KEY },
  ),
  get('batch of 60 queries, no key, jsonl', `/trpc/${Array(60).fill('pets.list').join(',')}?batch=1`, {
    'trpc-accept': 'application/jsonl',
    ...NO_KEY,
  }),
  post(
    'batch of 60 creates, some invalid',
    `/trpc/${Array(60).fill('pets.create').join(',')}?batch=1`,
    JSON.stringify(
      Object.fromEntries(Array.from({ length: 60 }, (_, i) => [i, { name: i % 10 === 9 ? '' : `Sixty ${i}`, categoryId: i + 1 }])),
    ),
  ),

  // Streaming (httpBatchStreamLink's requests).
  get('list, jsonl', `/trpc/pets.list?input=${q({ limit: 1 })}`, { 'trpc-accept': 'application/jsonl' }),
  get('batch of 2, jsonl', `/trpc/pets.list,pets.get?batch=1&input=${q({ 0: { limit: 1 }, 1: { petId: 987654 } })}`, {
    'trpc-accept': 'application/jsonl',
  }),
  get(
    'batch of 60, jsonl',
    `/trpc/${Array(60).fill('pets.get').join(',')}?batch=1&input=${q(Object.fromEntries(Array.from({ length: 60 }, (_, i) => [i, { petId: (i % 5) + 1 }])))}`,
    { 'trpc-accept': 'application/jsonl' },
  ),
  post('create, jsonl', '/trpc/pets.create?batch=1', JSON.stringify({ 0: { name: 'Streamed', categoryId: 1 } }), {
    ...JSON_TYPE,
    'trpc-accept': 'application/jsonl',
  }),
  get('list, Accept: jsonl', `/trpc/pets.list?input=${q({ limit: 1 })}`, { accept: 'application/jsonl' }),
  get('list, jsonl, no key', '/trpc/pets.list?batch=1', { 'trpc-accept': 'application/jsonl', ...NO_KEY }),

  // Unknown procedures and paths.
  get('unknown procedure', '/trpc/pets.nope'),
  get('unknown namespace', '/trpc/nope'),
  get('a namespace, not a procedure', '/trpc/pets'),
  get('a procedure path with more', '/trpc/pets.list.more'),
  get('__proto__', '/trpc/__proto__'),
  get('constructor', '/trpc/constructor'),
  get('toString', '/trpc/pets.toString'),
  get('unknown procedure, no key', '/trpc/pets.nope', NO_KEY),
  post('unknown mutation', '/trpc/pets.delete', '{}'),
  get('an empty procedure name', '/trpc/'),
  get('a trailing slash', '/trpc/pets.list/'),
  get('two segments', '/trpc/pets/list'),

  // Wrong methods.
  get('GET a mutation', `/trpc/pets.create?input=${q({ name: 'X', categoryId: 1 })}`),
  post('POST a query', '/trpc/pets.list', '{}'),
  post('POST a query, batch', '/trpc/pets.list?batch=1', JSON.stringify({ 0: {} })),
  { label: 'PUT a mutation', method: 'PUT', path: '/trpc/pets.create', headers: JSON_TYPE, body: newPet('Put') },
  { label: 'PATCH a mutation', method: 'PATCH', path: '/trpc/pets.create', headers: JSON_TYPE, body: newPet('Patch') },
  { label: 'DELETE a query', method: 'DELETE', path: '/trpc/pets.list' },
  { label: 'HEAD a query', method: 'HEAD', path: `/trpc/pets.list?input=${q({ limit: 1 })}` },
  { label: 'OPTIONS a query', method: 'OPTIONS', path: '/trpc/pets.list' },

  // Deprecated procedure headers, on success and failure.
  get('get, deprecated, on an error', `/trpc/pets.get?input=${q({ petId: 0 })}`),
  get('list after everything', '/trpc/pets.list?input=' + q({ limit: 100 })),

  // Numbers whose JSON text is not an integer but that JSON.parse rounds to one, and an integer too
  // long for a double (INTEGER_RULE below). Last: tRPC's handler creates pets that ours refuses.
  get('get, petId 0.99999999999999999999', `/trpc/pets.get?input=${encodeURIComponent('{"petId":0.99999999999999999999}')}`),
  get('list, limit 100.000000000000001', `/trpc/pets.list?input=${encodeURIComponent('{"limit":100.000000000000001}')}`),
  get('get, petId of 400 digits', `/trpc/pets.get?input=${encodeURIComponent(`{"petId":${'9'.repeat(400)}}`)}`),
  get(
    'batch of 2: petId 1.0000000000000001',
    `/trpc/pets.get,pets.get?batch=1&input=${encodeURIComponent('{"0":{"petId":1.0000000000000001},"1":{"petId":1}}')}`,
  ),
  post('create, categoryId 0.99999999999999999999', '/trpc/pets.create', '{"name":"Rounded","categoryId":0.99999999999999999999}'),
  post(
    'batch of 2: create with categoryId 1.0000000000000001',
    '/trpc/pets.create,pets.create?batch=1',
    '{"0":{"name":"Rounded","categoryId":1.0000000000000001},"1":{"name":"Kept","categoryId":1}}',
  ),

  // A batch naming an unknown procedure (UNKNOWN_AS_ONE below). Last: tRPC's handler runs the known
  // call, which counts against the key (the RateLimit header's remaining count), ours none.
  get('batch of 2: one unknown procedure', `/trpc/pets.list,pets.nope?batch=1&input=${q({})}`),
  get('batch of 3: two unknown procedures', `/trpc/pets.nope,pets.list,nope?batch=1&input=${q({})}`),
];

/**
 * Batches from a known key that name a procedure that does not exist: the service refuses each as
 * a whole, before its body is read, with one NOT_FOUND naming the first unknown name, so that the
 * answer does not grow with the names (test/security/batch-costs.test.ts); tRPC's handler answers
 * call by call. The label, and the name the error gives.
 */
const UNKNOWN_AS_ONE: Record<string, string> = {
  'batch of 2: one unknown procedure': 'pets.nope',
  'batch of 3: two unknown procedures': 'pets.nope',
};

/**
 * Where the service answers differently from tRPC's stock adapter on purpose: the label, and why.
 * Each must still differ (else it is stale and must go), and our answer must be in tRPC's shape.
 */
const LISTED_DIFFERENCES: Record<string, string> = {
  'create, form content type':
    'Fastify has no parser for it and refuses it (415) before tRPC runs; stock Fastify answers in its own error shape, we in tRPC’s.',
  'create, XML': 'As above: Fastify’s 415, which we answer in tRPC’s shape (UNSUPPORTED_MEDIA_TYPE) so tRPC clients can read it.',
  'create, JSON-ish vendor type': 'As above: Fastify’s 415 in tRPC’s shape.',
  'create, a body over the limit': 'Fastify’s 413 (BODY_LIMIT_BYTES), which we answer in tRPC’s shape (PAYLOAD_TOO_LARGE).',
  'create, no content type': 'A body without Content-Type: Fastify’s 415, in tRPC’s shape.',
  'a trailing slash': 'No route: stock leaves it to Fastify’s default 404 body; under /trpc we answer 404 in tRPC’s shape.',
  'two segments': 'As above: a 404 in tRPC’s shape instead of Fastify’s default body.',
  'list, undecodable procedure name':
    'Fastify cannot decode the path and refuses it (400) in its own shape; we route it with its encoding kept as sent, and answer tRPC’s own 400 "Invalid URL-encoding in path", as JSON (tRPC’s handler sends that one as text/plain).',
};

/**
 * Where integers are decided by the JSON text (docs/decisions.md, "Integers in JSON"): tRPC's handler
 * reads the number JSON.parse gives (0.99999999999999999999 is 1, a 400-digit integer Infinity); the
 * service refuses the call whose number is not an integer, and calls a too-long integer too large.
 * The label, and what our answer says of its first call.
 */
const INTEGER_RULE: Record<string, { field: string; message: string }> = {
  'get, petId 0.99999999999999999999': { field: 'petId', message: 'must be an integer' },
  'list, limit 100.000000000000001': { field: 'limit', message: 'must be an integer' },
  'get, petId of 400 digits': { field: 'petId', message: 'must be at most 9007199254740991 (2^53 − 1)' },
  'batch of 2: petId 1.0000000000000001': { field: 'petId', message: 'must be an integer' },
  'create, categoryId 0.99999999999999999999': { field: 'categoryId', message: 'must be an integer' },
  'batch of 2: create with categoryId 1.0000000000000001': { field: 'categoryId', message: 'must be an integer' },
};

/**
 * Requests without a key that name several calls or ask for a stream, with how many calls: the
 * service refuses each as a whole before its body is read, with one error that does not grow with
 * the batch and that tRPC's links give to every call (test/trpc-refusals.test.ts); tRPC's handler
 * answers call by call (a streamed one with 200). Same words, one error instead of one per call.
 */
const REFUSED_AS_ONE: Record<string, number> = {
  'batch of 2: no key': 2,
  'list, jsonl, no key': 1,
  'batch of 60 creates, no key': 60,
  'batch of 60 queries, no key, jsonl': 60,
};

/** Headers only the service sends, and why (compared on their own, not against the reference). */
const OUR_HEADERS = {
  // RFC 9110 §11.6.1 / RFC 6750 §3: a 401 carries a challenge; tRPC's adapter sends none.
  'www-authenticate': (answer: WireAnswer) =>
    answer.status === 401 ? /^Bearer realm="animal-store"(, error="invalid_token")?$/ : undefined,
};

let ours: TestServer;
let reference: Awaited<ReturnType<typeof startReference>>;
const answers = new Map<string, { ours: WireAnswer; reference: WireAnswer }>();

beforeAll(async () => {
  [ours, reference] = await Promise.all([startTestServer(), startReference()]);
  // One request at a time, the same order on both: the same ids, counts and idempotency records.
  for (const request of battery) {
    const mine = await send(ours.baseUrl, request);
    const theirs = await send(reference.baseUrl, request);
    answers.set(request.label, { ours: mine, reference: theirs });
  }
}, 120_000);
afterAll(() => Promise.all([ours?.close(), reference?.close()]));

describe('the /trpc wire format is tRPC’s own', () => {
  it('the battery is large and covers the kinds of request asked for', () => {
    expect(battery.length).toBeGreaterThanOrEqual(100);
    expect(new Set(battery.map((request) => request.label)).size).toBe(battery.length);
    for (const label of [
      ...Object.keys(LISTED_DIFFERENCES),
      ...Object.keys(REFUSED_AS_ONE),
      ...Object.keys(INTEGER_RULE),
      ...Object.keys(UNKNOWN_AS_ONE),
    ]) {
      expect(answers.has(label), label).toBe(true);
    }
  });

  it.each(
    battery
      .filter(
        (request) =>
          !(request.label in LISTED_DIFFERENCES) &&
          !(request.label in REFUSED_AS_ONE) &&
          !(request.label in INTEGER_RULE) &&
          !(request.label in UNKNOWN_AS_ONE),
      )
      .map((request) => [request.label, request]),
  )('%s: same status, body and headers', (_label, request) => {
    const { ours: mine, reference: theirs } = answers.get(request.label)!;
    expect(comparable(mine)).toEqual(comparable(theirs));
    perKeyHeadersHold(mine, theirs);
    for (const [name, expected] of Object.entries(OUR_HEADERS)) {
      const pattern = expected(mine);
      if (pattern) expect(mine.headers[name]).toMatch(pattern);
      else expect(mine.headers[name]).toBeUndefined();
    }
  });

  it.each(Object.entries(LISTED_DIFFERENCES))('listed difference: %s (%s)', (label) => {
    const { ours: mine, reference: theirs } = answers.get(label)!;
    expect(comparable(mine), 'no longer differs: remove it from the list').not.toEqual(comparable(theirs));
    expect(mine.status).toBe(theirs.status);
    const body = JSON.parse(mine.body) as { error: { code: number; data: { code: string; httpStatus: number } } };
    expect(body.error).toMatchObject({ code: expect.any(Number), data: { code: expect.any(String), httpStatus: mine.status } });
  });
});

describe('integers are decided by the JSON text, where tRPC’s handler reads the rounded number', () => {
  type Item = { result?: unknown; error?: { message: string; data: { code: string; httpStatus: number } } };
  it.each(Object.entries(INTEGER_RULE))('%s', (label, { field, message }) => {
    const { ours: mine, reference: theirs } = answers.get(label)!;
    expect(comparable(mine), 'no longer differs: remove it from the list').not.toEqual(comparable(theirs));
    expect(mine.headers['content-type']).toBe('application/json');
    const body = JSON.parse(mine.body) as Item | Item[];
    const first = Array.isArray(body) ? body[0]! : body;
    expect(first.error?.data).toMatchObject({ code: 'BAD_REQUEST', httpStatus: 400 });
    expect(first.error!.message).toBe(`${field}: ${message}`);
    // Any other call of a batch is answered as tRPC's handler answers it (a created pet's id
    // aside: tRPC's handler created one more pet before it).
    const withoutId = (items: Item[]) => JSON.stringify(items.slice(1)).replace(/"id":\d+/g, '"id":0');
    if (Array.isArray(body)) expect(withoutId(body)).toBe(withoutId(JSON.parse(theirs.body) as Item[]));
  });
});

describe('a request without a key that names several calls is refused as one', () => {
  it.each(Object.entries(REFUSED_AS_ONE))('%s: one UNAUTHORIZED error with the words of a single call’s', (label, calls) => {
    const { ours: mine, reference: theirs } = answers.get(label)!;
    const single = JSON.parse(answers.get('list, no key')!.ours.body) as { error: { message: string; code: number } };
    expect(mine.status).toBe(401);
    expect(mine.headers['content-type']).toBe('application/json');
    expect(mine.headers['www-authenticate']).toBe('Bearer realm="animal-store"');
    expect(JSON.parse(mine.body)).toEqual({
      error: { message: single.error.message, code: single.error.code, data: { code: 'UNAUTHORIZED', httpStatus: 401, zodError: null } },
    });
    // tRPC's handler: the same words once per call.
    expect([200, 401]).toContain(theirs.status);
    expect(theirs.body.split(JSON.stringify(single.error.message).slice(1, -1)).length - 1).toBe(calls);
  });
});

describe('a batch from a known key that names an unknown procedure is refused as one', () => {
  it.each(Object.entries(UNKNOWN_AS_ONE))('%s: one NOT_FOUND error naming %s', (label, name) => {
    const { ours: mine, reference: theirs } = answers.get(label)!;
    expect(mine.status).toBe(404);
    expect(mine.headers['content-type']).toBe('application/json');
    expect(JSON.parse(mine.body)).toEqual({
      error: {
        message: `No procedure found on path "${name}"`,
        code: -32004,
        data: { code: 'NOT_FOUND', httpStatus: 404, zodError: null },
      },
    });
    // tRPC's handler: an item per call, the unknown ones NOT_FOUND.
    expect(Array.isArray(JSON.parse(theirs.body))).toBe(true);
  });
});

describe('the internals module', () => {
  it('is the only file that touches tRPC’s `_def`', async () => {
    const { readdir, readFile } = await import('node:fs/promises');
    const files = (await readdir('src', { recursive: true })).filter((file) => file.endsWith('.ts') && !file.includes('generated'));
    const touching: string[] = [];
    for (const file of files) if ((await readFile(`src/${file}`, 'utf8')).includes('_def')) touching.push(file);
    expect(touching).toEqual(['api/trpc-internals.ts']);
  });

  it('refuses at start-up a router whose internals are not as expected', () => {
    expect(() => trpcInternals({ _def: {} } as never)).toThrow(TrpcInternalsError);
    const renamed = { _def: { ...appRouter._def, procedures: { 'pets.list': { _def: { kind: 'query', inputs: [] } } } } };
    expect(() => trpcInternals(renamed as never)).toThrow(/procedure pets.list has no _def.type/);
    expect(() => trpcInternals(appRouter)).not.toThrow();
  });
});
