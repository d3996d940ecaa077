// Set-up as a new user meets it: `npm start` with no settings at all creates and migrates a SQLite
// file under the working directory, makes a development key and shows it once, serves the API,
// and stops on SIGTERM; the built output (what `npm start` runs) does the same.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { FROM_SOURCE, ROOT, startServiceProcess } from './support/service-process.js';

const workDir = mkdtempSync(join(tmpdir(), 'animal-store-start-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

// Each test starts a whole process (compiling, migrating): seconds, more on a busy machine.
const PROCESS_TEST_TIMEOUT_MS = 60_000;
let developmentKey = '';

describe('npm start on a fresh checkout', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it('creates, migrates and serves ./data/animal-store.db, with a development key printed once', async () => {
    const { baseUrl, logs, stderr, stop } = await startServiceProcess({ LOG_LEVEL: 'info' }, { cwd: workDir });
    expect(existsSync(join(workDir, 'data', 'animal-store.db'))).toBe(true);
    const migrated = logs.find((entry) => entry.msg === 'database migrated') as { applied?: string[] } | undefined;
    expect(migrated?.applied?.[0]).toMatch(/_init$/);

    // The key is shown on the terminal (stderr), and never written to the JSON log.
    const key = /Authorization: Bearer (\S+)/.exec(stderr())?.[1];
    expect(key).toMatch(/^ask_[\w-]{43}$/);
    expect(JSON.stringify(logs)).not.toContain(key);

    const created = await fetch(`${baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{"name":"First","categoryId":1}',
    });
    expect(created.status).toBe(201);
    expect((await fetch(`${baseUrl}/v1/pets`)).status).toBe(401);

    // NODE_ENV is unset here: still no stack trace in any error, on either surface.
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    for (const [path, init] of [
      ['/v1/pets', { method: 'POST', headers: auth, body: '{"name":' }],
      ['/v1/pets', { method: 'POST', headers: auth, body: '{"name":"","categoryId":"x"}' }],
      ['/v1/pets/abc', { headers: auth }],
      ['/trpc/pets.create', { method: 'POST', headers: auth, body: '{"name":null}' }],
      ['/trpc/pets.get?input=%7B%7D', { headers: auth }],
    ] as const) {
      const response = await fetch(baseUrl + path, init);
      expect(response.status).toBe(400);
      expect(await response.text()).not.toMatch(/stack|\bat .+:\d+:\d+|node_modules/);
    }
    expect(await stop()).toBe(0);
    developmentKey = key!;
  });

  it('a second start finds the database up to date, the data and the key still there, and prints no key', async () => {
    const { baseUrl, logs, stderr, stop } = await startServiceProcess({ LOG_LEVEL: 'info' }, { cwd: workDir });
    expect(logs.map((entry) => entry.msg)).toContain('database is up to date');
    expect(stderr()).not.toMatch(/Bearer/);
    const pets = await (await fetch(`${baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${developmentKey}` } })).json();
    expect(pets).toEqual([{ id: 1, name: 'First', categoryId: 1, status: 'available' }]);
    expect(await stop()).toBe(0);
  });

  it('refuses to start in production with no key at all, saying why', async () => {
    const emptyDir = mkdtempSync(join(tmpdir(), 'animal-store-prod-'));
    try {
      const [program, ...args] = FROM_SOURCE;
      const child = spawn(program, args, {
        cwd: emptyDir,
        env: { ...process.env, NODE_ENV: 'production', API_KEYS: '', DATABASE_URL: '', LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      const code = await new Promise((resolve) => child.on('exit', resolve));
      expect(code).toBe(1);
      expect(stdout).toMatch(/No API key exists: set API_KEYS, or create one with `npm run keys -- create --name <name>`/);
    } finally {
      rmSync(emptyDir, { recursive: true, force: true });
    }
  });
});

describe('npm start: the built output', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  const KEY = 'built-key-0123456789abcdef';

  it('npm run build compiles src/ to dist/; node dist/main.js serves the API, the docs and the health checks', async () => {
    await promisify(execFile)('npm', ['run', 'build'], { cwd: ROOT });
    const service = await startServiceProcess(
      { API_KEYS: KEY, LOG_LEVEL: 'info', DATABASE_URL: `file:${join(workDir, 'built.db')}` },
      { command: [process.execPath, join(ROOT, 'dist', 'main.js')] },
    );
    try {
      expect((await fetch(`${service.baseUrl}/healthz`)).status).toBe(200);
      expect((await fetch(`${service.baseUrl}/readyz`)).status).toBe(200);
      expect((await fetch(`${service.baseUrl}/v1/docs`)).status).toBe(200);

      // The package export `animal-store/client` resolves to the built client, as an app importing it would.
      const script = `
        const { createClient } = await import('animal-store/client');
        const client = createClient(process.argv[1], process.argv[2]);
        const pet = await client.pets.create.mutate({ name: 'Built', categoryId: 9 });
        console.log(JSON.stringify(await client.pets.get.query({ petId: pet.id })));`;
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, service.baseUrl, KEY], { cwd: ROOT });
      expect(JSON.parse(stdout)).toEqual({ id: expect.any(Number), name: 'Built', categoryId: 9, status: 'available' });
    } finally {
      expect(await service.stop()).toBe(0);
    }
  });
});
