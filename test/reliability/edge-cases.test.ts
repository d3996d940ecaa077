// Small promises of the contract, each as it now holds: names that are blank in disguise or not
// valid Unicode are refused; a body that is not UTF-8 is refused, never stored as U+FFFD; unknown query
// parameters are ignored even when repeated; REST requests refused for their input count against
// the key's limit; a database that cannot be opened stops start-up with one clear line.
import { execFile } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { expectError } from '../support/expect-error.js';
import { FROM_SOURCE } from '../support/service-process.js';
import { API_KEY, json, startTestServer, type TestServer } from '../support/test-server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** POSTs `body` as raw bytes (fetch would re-encode a string as UTF-8). */
function postBytes(baseUrl: string, path: string, body: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      baseUrl + path,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'content-length': body.length },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('names', () => {
  it.each([
    ['only a zero width space', '\u200b', /name: must not be blank/],
    ['only zero width characters and spaces', ' \u200b\ufeff\u200d ', /name: must not be blank/],
    ['a lone surrogate', 'Rex\ud800', /name: must be valid Unicode text/],
  ])('%s is refused on both surfaces', async (_, name, message) => {
    server = await startTestServer();
    await expectError(await server.post('/v1/pets', { name, categoryId: 1 }), 400, 'BAD_REQUEST', message);
    const trpc = await server.post('/trpc/pets.create', { name, categoryId: 1 });
    expect(trpc.status).toBe(400);
    expect(await server.database.prisma.pet.count()).toBe(0);
  });

  it('a body that is not UTF-8 is refused with 400 and nothing is stored (docs/decisions.md)', async () => {
    server = await startTestServer();
    const body = Buffer.concat([Buffer.from('{"name":"R'), Buffer.from([0xff]), Buffer.from('x","categoryId":1}')]);
    const refused = await postBytes(server.baseUrl, '/v1/pets', body);
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'BAD_REQUEST', status: 400, message: expect.stringMatching(/UTF-8/) });
    expect(await server.database.prisma.pet.count()).toBe(0);
  });
});

describe('query parameters', () => {
  it('unknown ones are ignored, even repeated; a repeated known one is refused', async () => {
    server = await startTestServer();
    expect((await server.request('/v1/pets?utm=a&utm=b')).status).toBe(200);
    await expectError(await server.request('/v1/pets?limit=1&limit=2'), 400, 'BAD_REQUEST', /limit: must be given once/);
  });
});

describe('the per-key limit', () => {
  it('counts REST requests refused for their input', async () => {
    server = await startTestServer({ config: { rateLimitPerMinute: 3 } });
    const answers = [
      await server.request('/v1/pets?limit=abc'),
      await server.post('/v1/pets', '[1,2]'),
      await server.request('/v1/pets/x'),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(answer.headers.get('ratelimit')).toMatch(/^"per-key";r=\d;t=\d+$/);
    }
    await expectError(await server.request('/v1/pets'), 429, 'TOO_MANY_REQUESTS');
    expect(await json(server.request('/healthz'))).toEqual({ status: 'ok' });
  });
});

describe('start-up', () => {
  it('a database that cannot be opened stops it with one clear line, no stack trace', { timeout: 60_000 }, async () => {
    const [node, ...args] = FROM_SOURCE;
    // /proc refuses new files, even to root: as a read-only directory does.
    const env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: 'file:/proc/self/animal-store.db',
      API_KEYS: API_KEY,
      PORT: '0',
    };
    const outcome = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(node, args, { env, timeout: 30_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
    });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toBe('');
    const lines = outcome.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(lines.at(-1)).toMatchObject({
      level: 60,
      msg: expect.stringMatching(/^Cannot open the SQLite file \/proc\/self\/animal-store\.db: .*writable by this user\.$/),
    });
    expect(outcome.stdout).not.toMatch(/\bat \S+ \(|wasm|node:internal/);
  });
});
