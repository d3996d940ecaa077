// Set-up as a new user meets it: `npm start` with no settings at all creates and migrates a SQLite
// file under the working directory, prints a key to use, serves the API, and stops on SIGTERM.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx');
const MAIN = join(ROOT, 'src', 'main.ts');
const workDir = mkdtempSync(join(tmpdir(), 'animal-store-start-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

interface Started {
  child: ChildProcess;
  baseUrl: string;
  logs: Array<Record<string, unknown>>;
}

/**
 * Starts the service in `workDir` with only the given settings: from source through tsx (as
 * `npm run dev` does) unless `command` says otherwise (the built output: `node dist/main.js`).
 */
function start(env: Record<string, string> = {}, command: [string, ...string[]] = [TSX, MAIN]): Promise<Started> {
  const { DATABASE_URL: _u, API_KEYS: _k, NODE_ENV: _n, PORT: _p, ...inherited } = process.env;
  const [program, ...args] = command;
  const child = spawn(program, args, { cwd: workDir, env: { ...inherited, PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Array<Record<string, unknown>> = [];
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`no start within 20 s: ${JSON.stringify(logs)}`)), 20_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        const entry = JSON.parse(line) as Record<string, unknown>;
        logs.push(entry);
        const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(String(entry.msg));
        if (listening) {
          clearTimeout(timer);
          resolve({ child, baseUrl: listening[1]!, logs });
        }
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}`));
    });
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.on('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

// Each test starts a whole process (tsx compiling, migrating): seconds, more on a busy machine.
const PROCESS_TEST_TIMEOUT_MS = 60_000;

describe('npm start on a fresh checkout', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it('creates, migrates and serves ./data/animal-store.db, with a generated key printed once', async () => {
    const { child, baseUrl, logs } = await start();
    expect(existsSync(join(workDir, 'data', 'animal-store.db'))).toBe(true);
    expect(logs.find((entry) => entry.msg === 'database migrated')).toMatchObject({ applied: [expect.stringMatching(/_init$/)] });

    const keyLine = logs.map((entry) => String(entry.msg)).find((msg) => msg.includes('Authorization: Bearer'));
    const key = /Bearer (\S+)/.exec(keyLine ?? '')?.[1];
    expect(key).toMatch(/^[\w-]{32}$/);

    const created = await fetch(`${baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{"name":"First","categoryId":1}',
    });
    expect(created.status).toBe(201);
    expect((await fetch(`${baseUrl}/v1/pets`)).status).toBe(401);
    expect(await stop(child)).toBe(0);
  });

  it('a second start finds the database up to date and the data still there', async () => {
    const { child, baseUrl, logs } = await start({ API_KEYS: 'restart-key-0123456789' });
    expect(logs.some((entry) => entry.msg === 'database is up to date')).toBe(true);
    expect(logs.some((entry) => String(entry.msg).includes('Bearer'))).toBe(false);
    const pets = await (await fetch(`${baseUrl}/v1/pets`, { headers: { authorization: 'Bearer restart-key-0123456789' } })).json();
    expect(pets).toEqual([{ id: 1, name: 'First', categoryId: 1, status: 'available' }]);
    expect(await stop(child)).toBe(0);
  });

  it('refuses to start in production without API_KEYS, saying why', async () => {
    const child = spawn(TSX, [MAIN], { cwd: workDir, env: { ...process.env, NODE_ENV: 'production', API_KEYS: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toMatch(/API_KEYS: is required when NODE_ENV=production/);
  });
});

describe('npm start: the built output', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  const KEY = 'built-key-0123456789abcdef';

  it('npm run build compiles src/ to dist/; node dist/main.js serves the API, the docs and the health checks', async () => {
    await promisify(execFile)('npm', ['run', 'build'], { cwd: ROOT });
    const { child, baseUrl } = await start({ API_KEYS: KEY }, [process.execPath, join(ROOT, 'dist', 'main.js')]);
    try {
      expect((await fetch(`${baseUrl}/healthz`)).status).toBe(200);
      expect((await fetch(`${baseUrl}/readyz`)).status).toBe(200);
      expect((await fetch(`${baseUrl}/v1/docs`)).status).toBe(200);

      // The package export `animal-store/client` resolves to the built client, as an app importing it would.
      const script = `
        const { createClient } = await import('animal-store/client');
        const client = createClient(process.argv[1], process.argv[2]);
        const pet = await client.pets.create.mutate({ name: 'Built', categoryId: 9 });
        console.log(JSON.stringify(await client.pets.get.query({ petId: pet.id })));`;
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, baseUrl, KEY], { cwd: ROOT });
      expect(JSON.parse(stdout)).toEqual({ id: expect.any(Number), name: 'Built', categoryId: 9, status: 'available' });
    } finally {
      expect(await stop(child)).toBe(0);
    }
  });
});
