// Every status the service sends for an operation is one the document lists for it. A corpus of
// requests to each REST operation, good and bad in every way this service tells apart (input,
// key, idempotency, body size, type and coding, slow headers and bodies, oversized headers, what
// Node's parser refuses, the per-key limit, a database that cannot write, a failing one), sent as
// raw HTTP; each answer's status must be among the operation's documented responses, its body the
// envelope with the code of that status, its headers every one the document declares required for
// that response (and every declared response is met), and the document's example of that status
// must say what the service says. 404 for unknown paths and 405 for other methods belong to no
// operation: the document's description states them.
import { connect } from 'node:net';
import Sqlite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteFilePath } from '../src/db/providers.js';
import { restOperations } from './support/operations.js';
import { API_KEY, startTestServer, type TestServer } from './support/test-server.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document is walked by path
type Doc = any;

/** Short timeouts, so that a slow request gets its 408 within a test's time. */
const TIMEOUTS = { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 };

let server: TestServer;
let limited: TestServer;
let failing: TestServer;
let doc: Doc;
beforeAll(async () => {
  [server, limited, failing] = await Promise.all([
    startTestServer({ provider: 'sqlite', config: TIMEOUTS }),
    startTestServer({ provider: 'sqlite', config: { rateLimitPerMinute: 2 } }),
    startTestServer({ provider: 'sqlite' }),
  ]);
  // Its table taken away under it: every query fails inside the database layer (500).
  await failing.database.prisma.$executeRawUnsafe('ALTER TABLE pets RENAME TO pets_away');
  doc = await (await fetch(`${server.baseUrl}/v1/openapi.json`)).json();
});
afterAll(() => Promise.all([server?.close(), limited?.close(), failing?.close()]));

interface Answer {
  status: number;
  /** The head's header names, lower-cased. */
  headers: ReadonlySet<string>;
  body: string;
}

/** The answer in `text` (a raw response, or what came of it), status 0 when there is none. */
function answerOf(text: string): Answer {
  const end = text.indexOf('\r\n\r\n');
  const head = end === -1 ? text : text.slice(0, end);
  return {
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0),
    headers: new Set(
      head
        .split('\r\n')
        .slice(1)
        .map((line) => line.slice(0, line.indexOf(':')).toLowerCase()),
    ),
    body: end === -1 ? '' : text.slice(end + 4),
  };
}

/**
 * One raw HTTP/1.1 request (`head` is the request line and headers, without the blank line), with
 * `body` written `bodyDelayMs` later (never, when null: the request stays incomplete). Resolves with
 * the first response on the connection.
 */
function raw(target: TestServer, head: string, body = '', bodyDelayMs = 0): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(target.baseUrl).port), '127.0.0.1');
    let received = Buffer.alloc(0);
    const done = () => {
      const answer = answerOf(received.toString('utf8'));
      if (answer.status === 0) return reject(new Error(`no answer to ${head.split('\r\n')[0]}`));
      resolve(answer);
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const text = received.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)/i.exec(text);
      if (end !== -1 && length && received.length >= end + 4 + Number(length[1])) {
        socket.destroy();
        done();
      }
    });
    socket.on('error', () => {});
    socket.on('close', done);
    socket.write(`${head}\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
    if (body !== null) setTimeout(() => socket.writable && socket.write(body), bodyDelayMs);
    setTimeout(() => socket.destroy(), 15_000).unref();
  });
}

const KEY = `Authorization: Bearer ${API_KEY}`;
const JSON_TYPE = 'Content-Type: application/json';

function post(body: string, headers: string[] = [KEY, JSON_TYPE], target = server): Promise<Answer> {
  return raw(target, ['POST /v1/pets HTTP/1.1', ...headers, `Content-Length: ${Buffer.byteLength(body)}`].join('\r\n'), body);
}
function get(path: string, headers: string[] = [KEY], method = 'GET', target = server): Promise<Answer> {
  return raw(target, [`${method} ${path} HTTP/1.1`, ...headers].join('\r\n'));
}
/** Headers that never end: the request line and one header, then nothing (408 after HEADERS_TIMEOUT_MS). */
function slowHeaders(requestLine: string): Promise<Answer> {
  return new Promise((resolve) => {
    const socket = connect(Number(new URL(server.baseUrl).port), '127.0.0.1');
    let text = '';
    socket.on('connect', () => socket.write(`${requestLine}\r\nHost: localhost\r\n${KEY}\r\n`));
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    socket.on('error', () => {});
    socket.on('close', () => resolve(answerOf(text)));
    setTimeout(() => socket.destroy(), 15_000).unref();
  });
}
const BIG_HEADER = `X-Padding: ${'a'.repeat(20_000)}`;
const newPet = (name: string, categoryId: string | number = 1) => `{"name":${JSON.stringify(name)},"categoryId":${categoryId}}`;

/** A write refused because another process holds SQLite's write lock past the wait (503 with Retry-After). */
async function createWhileLocked(): Promise<Answer> {
  const other = new Sqlite(sqliteFilePath(server.databaseUrl));
  other.exec('BEGIN IMMEDIATE');
  try {
    return await post(newPet('Locked out'));
  } finally {
    other.exec('ROLLBACK');
    other.close();
  }
}

/** Each operation of the router (its operationId) and where the document has it: path and method. */
type Operation = string;
const OPERATIONS: Record<Operation, [string, string]> = Object.fromEntries(
  restOperations().map(({ operationId, path, method }) => [operationId, [path, method.toLowerCase()]]),
);

/** The corpus: each operation, requests that each get one of the answers it can give. */
const CORPUS: Array<[Operation, string, () => Promise<Answer>]> = [
  ['createPet', 'created', () => post(newPet('Corpus'))],
  ['createPet', 'created with a key', () => post(newPet('Keyed'), [KEY, JSON_TYPE, 'Idempotency-Key: corpus-1'])],
  ['createPet', 'replayed', () => post(newPet('Keyed'), [KEY, JSON_TYPE, 'Idempotency-Key: corpus-1'])],
  ['createPet', 'key reused with another body', () => post(newPet('Other'), [KEY, JSON_TYPE, 'Idempotency-Key: corpus-1'])],
  ['createPet', 'malformed Idempotency-Key', () => post(newPet('Bad key'), [KEY, JSON_TYPE, 'Idempotency-Key: a b'])],
  ['createPet', 'empty name', () => post(newPet(''))],
  ['createPet', 'categoryId 0.99999999999999999999', () => post(newPet('Rounded', '0.99999999999999999999'))],
  ['createPet', 'categoryId of 400 digits', () => post(newPet('Long', '9'.repeat(400)))],
  ['createPet', 'unknown field', () => post('{"name":"X","categoryId":1,"id":7}')],
  ['createPet', '__proto__ key', () => post('{"name":"X","categoryId":1,"__proto__":{}}')],
  ['createPet', 'invalid JSON', () => post('{"name":')],
  ['createPet', 'empty body', () => post('')],
  ['createPet', 'an array', () => post('[]')],
  ['createPet', 'too large', () => post(newPet('x'.repeat(70_000)))],
  ['createPet', 'text/plain', () => post(newPet('Plain'), [KEY, 'Content-Type: text/plain'])],
  ['createPet', 'no content type', () => post(newPet('Untyped'), [KEY])],
  ['createPet', 'no key', () => post(newPet('Mallory'), [JSON_TYPE])],
  ['createPet', 'wrong key', () => post(newPet('Mallory'), ['Authorization: Bearer wrong-key-0123456789abcdef', JSON_TYPE])],
  ['createPet', 'headers too large', () => post(newPet('Big'), [KEY, JSON_TYPE, BIG_HEADER])],
  [
    'createPet',
    'a body that never ends',
    () => raw(server, ['POST /v1/pets HTTP/1.1', KEY, JSON_TYPE, 'Content-Length: 100'].join('\r\n'), '{"name":"', 0),
  ],
  ['createPet', 'headers that never end', () => slowHeaders('POST /v1/pets HTTP/1.1')],
  ['createPet', 'the per-key limit', async () => (await Promise.all([1, 2, 3].map(() => post(newPet('L'), undefined, limited))))[2]!],
  ['createPet', 'the database cannot write', createWhileLocked],
  ['createPet', 'a gzip body', () => post(newPet('Zipped'), [KEY, JSON_TYPE, 'Content-Encoding: gzip'])],
  ['createPet', "a header Node's parser refuses", () => post(newPet('Odd'), [KEY, JSON_TYPE, 'Idempotency-Key: \x7f'])],
  ['createPet', 'the database fails', () => post(newPet('Lost'), undefined, failing)],

  ['listPets', 'listed', () => get('/v1/pets?limit=5&status=available')],
  ['listPets', 'HEAD', () => get('/v1/pets', [KEY], 'HEAD')],
  ['listPets', 'trailing slash', () => get('/v1/pets/')],
  ['listPets', 'a next page', () => get('/v1/pets?limit=1&after=1')],
  ['listPets', 'limit 0', () => get('/v1/pets?limit=0')],
  ['listPets', 'limit 1.5', () => get('/v1/pets?limit=1.5')],
  ['listPets', 'limit of 30 digits', () => get(`/v1/pets?limit=${'9'.repeat(30)}`)],
  ['listPets', 'limit twice', () => get('/v1/pets?limit=1&limit=2')],
  ['listPets', 'unknown status', () => get('/v1/pets?status=lost')],
  [
    'listPets',
    'a body on GET',
    () => raw(server, ['GET /v1/pets HTTP/1.1', KEY, 'Content-Type: text/plain', 'Content-Length: 1'].join('\r\n'), 'x'),
  ],
  ['listPets', 'no key', () => get('/v1/pets', [])],
  ['listPets', 'headers too large', () => get('/v1/pets', [KEY, BIG_HEADER])],
  ['listPets', 'headers that never end', () => slowHeaders('GET /v1/pets HTTP/1.1')],
  ['listPets', "a header Node's parser refuses", () => get('/v1/pets', [KEY, 'X-Odd: \x7f'])],
  ['listPets', 'the database fails', () => get('/v1/pets', [KEY], 'GET', failing)],
  ['listPets', 'the per-key limit', async () => (await Promise.all([1, 2, 3].map(() => get('/v1/pets', [KEY], 'GET', limited))))[2]!],

  ['getPet', 'found', () => get('/v1/pets/1')],
  ['getPet', 'HEAD', () => get('/v1/pets/1', [KEY], 'HEAD')],
  ['getPet', 'missing', () => get('/v1/pets/987654')],
  ['getPet', 'not an integer', () => get('/v1/pets/x')],
  ['getPet', 'of 30 digits', () => get(`/v1/pets/${'9'.repeat(30)}`)],
  ['getPet', 'zero', () => get('/v1/pets/0')],
  ['getPet', 'an encoded slash', () => get('/v1/pets/1%2F')],
  ['getPet', 'no key', () => get('/v1/pets/1', [])],
  ['getPet', 'headers too large', () => get('/v1/pets/1', [KEY, BIG_HEADER])],
  ['getPet', 'headers that never end', () => slowHeaders('GET /v1/pets/1 HTTP/1.1')],
  ['getPet', "a header Node's parser refuses", () => get('/v1/pets/1', [KEY, 'X-Odd: \x7f'])],
  ['getPet', 'the database fails', () => get('/v1/pets/1', [KEY], 'GET', failing)],
  ['getPet', 'the per-key limit', async () => (await Promise.all([1, 2, 3].map(() => get('/v1/pets/1', [KEY], 'GET', limited))))[2]!],
];

/** The requests answered only when a timeout ends: they hold nothing the others use. */
const ANSWERED_BY_A_TIMEOUT = new Set(['a body that never ends', 'headers that never end']);

const answers: Array<{ operation: Operation; label: string; answer: Answer }> = [];
beforeAll(async () => {
  const ask = async ([operation, label, send]: (typeof CORPUS)[number]) => ({ operation, label, answer: await send() });
  // Those waiting for a timeout side by side, from the start; the rest one at a time, in order
  // (the idempotency records and the per-key windows depend on it).
  const timedOut = Promise.all(CORPUS.filter(([, label]) => ANSWERED_BY_A_TIMEOUT.has(label)).map(ask));
  for (const entry of CORPUS) if (!ANSWERED_BY_A_TIMEOUT.has(entry[1])) answers.push(await ask(entry));
  answers.push(...(await timedOut));
}, 120_000);

const documented = (operation: Operation) => {
  const [path, method] = OPERATIONS[operation]!;
  return doc.paths[path][method].responses as Record<string, Doc>;
};

describe('every status the service sends for an operation is documented for it', () => {
  it('the corpus asks every operation of the router, and no other', () => {
    expect(new Set(CORPUS.map(([operation]) => operation))).toEqual(new Set(Object.keys(OPERATIONS)));
  });

  it('the corpus gets every kind of answer the service gives', () => {
    const statuses = new Set(answers.map(({ answer }) => answer.status));
    expect([...statuses].sort()).toEqual([200, 201, 400, 401, 404, 408, 413, 415, 422, 429, 431, 500, 503]);
  });

  it('every response the document declares is met, with every header it declares required there', () => {
    const unmet: string[] = [];
    for (const operation of Object.keys(OPERATIONS)) {
      for (const [status, response] of Object.entries(documented(operation))) {
        const met = answers.filter((entry) => entry.operation === operation && String(entry.answer.status) === status);
        if (met.length === 0) unmet.push(`${operation} ${status}`);
        const required = Object.entries((response.headers ?? {}) as Record<string, Doc>)
          .filter(([, header]) => (header.$ref ? doc.components.headers[header.$ref.split('/').pop()] : header).required)
          .map(([name]) => name.toLowerCase());
        for (const { label, answer } of met) {
          expect(
            required.filter((name) => !answer.headers.has(name)),
            `${operation} ${status} (${label}) lacks declared headers`,
          ).toEqual([]);
        }
      }
    }
    // A read's 503 (the database unreachable or overloaded) needs PostgreSQL or a proxy to take it
    // away: test/reliability/database-faults.test.ts; the headers are the same code's as createPet's.
    expect(unmet).toEqual(['listPets 503', 'getPet 503']);
  });

  it.each(CORPUS.map(([operation, label]) => [operation, label] as const))('%s, %s', (operation, label) => {
    const { answer } = answers.find((entry) => entry.operation === operation && entry.label === label)!;
    const response = documented(operation)[String(answer.status)];
    expect(response, `${operation} answers ${answer.status} (${label}), which its document does not list`).toBeDefined();
    if (answer.status < 400 || answer.body === '') return; // a success, or an answer to HEAD
    const body = JSON.parse(answer.body) as { code: string; message: string; status: number };
    const example = response.content['application/json'].example;
    expect(body).toEqual({ code: example.code, message: expect.any(String), status: answer.status });
  });

  it('each error example says what the service says, where its words do not depend on the input', () => {
    const fixed = [401, 408, 413, 415, 422, 431];
    for (const status of fixed) {
      const said = new Set(
        answers
          .filter(({ answer }) => answer.status === status)
          .map(({ answer }) => (JSON.parse(answer.body) as { message: string }).message),
      );
      for (const operation of Object.keys(OPERATIONS)) {
        const example = documented(operation)[String(status)]?.content['application/json'].example;
        if (example) expect(said, `${operation} ${status}`).toContain(example.message);
      }
    }
  });

  it('404 for unknown paths and 405 for other methods come before the key, as the description says', async () => {
    expect((await get('/v1/nope', [])).status).toBe(404);
    expect((await get('/v1/pets', [], 'DELETE')).status).toBe(405);
    expect(doc.info.description).toMatch(/404/);
    expect(doc.info.description).toMatch(/405 with `Allow`, before the key is checked/);
  });
});
