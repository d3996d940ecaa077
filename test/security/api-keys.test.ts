// API keys as credentials: issued by `npm run keys`, stored only as a digest, listed
// without secrets, revoked for every instance from the key's next request on, never logged.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import Sqlite from 'better-sqlite3';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/root-router.js';
import { buildApp, type App } from '../../src/app.js';
import { createApiKeyStore } from '../../src/auth/api-key-store.js';
import { parseConfig } from '../../src/config.js';
import { migrateDatabase, openDatabase, type Database } from '../../src/db/database.js';
import { hashApiKey } from '../../src/domain/api-key-shape.js';
import { ROOT, TSX } from '../support/service-process.js';
import { TEST_CONFIG } from '../support/test-server.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'animal-store-keys-'));
const file = join(dir, 'keys.db');
const env = { ...process.env, DATABASE_URL: `file:${file}`, NODE_ENV: 'test' };
const KEYS_CLI = join(ROOT, 'src', 'cli', 'keys.ts');

function keys(...args: string[]) {
  return run(TSX, [KEYS_CLI, ...args], { env, cwd: ROOT });
}

interface Instance {
  app: App;
  database: Database;
  baseUrl: string;
  logLines: string[];
}

/** One service instance on the shared database file, logging at trace level into memory. */
async function instance(): Promise<Instance> {
  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  const database = await openDatabase(parseConfig({ DATABASE_URL: `file:${file}` }));
  const app = await buildApp({ config: { ...TEST_CONFIG, apiKeys: [] }, database, logger: pino({ level: 'trace' }, sink) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address() as { port: number };
  return { app, database, baseUrl: `http://127.0.0.1:${address.port}`, logLines };
}

let first: Instance;
let second: Instance;
let key: string;

beforeAll(async () => {
  await migrateDatabase(`file:${file}`);
  first = await instance();
  second = await instance();
});
afterAll(async () => {
  for (const { app, database } of [first, second]) {
    await app.close();
    await database.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

const get = (baseUrl: string, apiKey: string) => fetch(`${baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${apiKey}` } });

describe('npm run keys', () => {
  it('create prints the new key once, alone on the last line of stdout', async () => {
    const { stdout, stderr } = await keys('create', '--name', 'billing-app');
    const lines = stdout.trimEnd().split('\n');
    key = lines.at(-1)!;
    expect(key).toMatch(/^ask_[A-Za-z0-9_-]{43}$/);
    expect(lines).toHaveLength(1);
    expect(stderr).toMatch(/billing-app/);
  });

  it('stores only a digest of the key', () => {
    const db = new Sqlite(file, { readonly: true });
    const rows = db.prepare('SELECT * FROM api_keys').all();
    db.close();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(key);
    expect(JSON.stringify(rows)).not.toContain(key.slice(4, 20));
    expect(readFileSync(file).includes(Buffer.from(key))).toBe(false);
  });

  it('the key works on every instance, and is not in any log line', async () => {
    expect((await get(first.baseUrl, key)).status).toBe(200);
    expect((await get(second.baseUrl, key)).status).toBe(200);
    const logs = [...first.logLines, ...second.logLines].join('');
    expect(logs.length).toBeGreaterThan(0);
    expect(logs).not.toContain(key);
    expect(logs).not.toContain(key.slice(4));
  });

  it('list shows name, id, creation and last use, and no secret', async () => {
    const { stdout } = await keys('list');
    expect(stdout).toMatch(/^name\tid\tcreated\tlast used\trevoked$/m);
    expect(stdout).toMatch(/^billing-app\t1\t\d{4}-\d\d-\d\dT[^\t]+\t\d{4}-\d\d-\d\dT[^\t]+\t-$/m);
    expect(stdout).not.toContain(key);
    expect(stdout).not.toMatch(/[0-9a-f]{64}/); // nor its digest
  });

  it('refuses a second key with the same name', async () => {
    await expect(keys('create', '--name', 'billing-app')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/exists already/),
    });
  });

  it('revoke: the key gets 401 on its next request, on every instance and both surfaces, with no restart', async () => {
    await keys('revoke', '--name', 'billing-app');
    for (const { baseUrl } of [first, second]) {
      const response = await get(baseUrl, key);
      expect(response.status).toBe(401);
      const client = createTRPCClient<AppRouter>({
        links: [httpLink({ url: `${baseUrl}/trpc`, headers: { authorization: `Bearer ${key}` } })],
      });
      const error = await client.pets.list.query().catch((cause: unknown) => cause);
      expect(error).toBeInstanceOf(TRPCClientError);
      expect((error as TRPCClientError<AppRouter>).data?.code).toBe('UNAUTHORIZED');
    }
    expect((await keys('list')).stdout).toMatch(/^billing-app\t1\t.+\t\d{4}-[^\t]+$/m);
  });

  it('revoking an unknown or already revoked name fails with exit code 2', async () => {
    await expect(keys('revoke', '--name', 'billing-app')).rejects.toMatchObject({ code: 2 });
    await expect(keys('revoke', '--name', 'nobody')).rejects.toMatchObject({ code: 2 });
  });

  it("never gives a revoked key's name out again", async () => {
    await expect(keys('create', '--name', 'billing-app')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/never reused/),
    });
  });

  it('rejects bad usage', async () => {
    await expect(keys('rotate')).rejects.toMatchObject({ code: 2, stderr: expect.stringMatching(/usage/) });
    await expect(keys('create')).rejects.toMatchObject({ code: 2 });
    await expect(keys('create', '--name', 'has space')).rejects.toMatchObject({ code: 2 });
  });
});

describe('last use (last_used_at)', () => {
  it('is written on the first use, then at most once a minute however often the key is used', async () => {
    let now = Date.parse('2030-01-01T00:00:00Z');
    const store = createApiKeyStore(first.database.prisma, { sqlite: first.database.sqlite, now: () => new Date(now) });
    const { key: apiKey, record } = await store.create('last-use-resolution');
    const lastUsed = async () => (await store.list()).find(({ id }) => id === record.id)!.lastUsedAt?.getTime() ?? null;
    /** One request's key check at `at`; the write, if any, runs beside it: give it time to land. */
    const useAt = async (at: number, expected: number) => {
      now = at;
      expect(await store.findActiveByHash(hashApiKey(apiKey))).toEqual({ id: record.id });
      const until = performance.now() + 2_000;
      while ((await lastUsed()) !== expected && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, 50)); // and no later write either
      expect(await lastUsed()).toBe(expected);
    };
    const start = now;
    expect(await lastUsed()).toBeNull();
    await useAt(start, start);
    for (const later of [1, 1_000, 30_000, 59_999]) await useAt(start + later, start);
    await useAt(start + 60_000, start + 60_000);
    await useAt(start + 119_999, start + 60_000);
    await useAt(start + 120_000, start + 120_000);
  });
});
