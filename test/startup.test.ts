// Set-up as a new user meets it: `npm start` with no settings at all creates and migrates a SQLite
// file under the working directory, prints a key to use, serves the API, and stops on SIGTERM.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
  stderr(): string;
}

let developmentKey = '';

/** Starts the service as `npm start` does, in `workDir`, with only the given settings. */
function start(env: Record<string, string> = {}): Promise<Started> {
  const { DATABASE_URL: _u, API_KEYS: _k, NODE_ENV: _n, PORT: _p, ...inherited } = process.env;
  const child = spawn(TSX, [MAIN], { cwd: workDir, env: { ...inherited, PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
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
          resolve({ child, baseUrl: listening[1]!, logs, stderr: () => stderr });
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

describe('npm start on a fresh checkout', () => {
  it('creates, migrates and serves ./data/animal-store.db, with a development key printed once', async () => {
    const { child, baseUrl, logs, stderr } = await start();
    expect(existsSync(join(workDir, 'data', 'animal-store.db'))).toBe(true);
    expect(logs.find((entry) => entry.msg === 'database migrated')).toMatchObject({ applied: [expect.stringMatching(/_init$/), expect.any(String)] });

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
    expect(await stop(child)).toBe(0);
    developmentKey = key!;
  });

  it('a second start finds the database up to date, the data and the key still there, and prints no key', async () => {
    const { child, baseUrl, logs, stderr } = await start();
    expect(logs.some((entry) => entry.msg === 'database is up to date')).toBe(true);
    expect(stderr()).not.toMatch(/Bearer/);
    const pets = await (await fetch(`${baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${developmentKey}` } })).json();
    expect(pets).toEqual([{ id: 1, name: 'First', categoryId: 1, status: 'available' }]);
    expect(await stop(child)).toBe(0);
  });

  it('refuses to start in production with no key at all, saying why', async () => {
    const emptyDir = mkdtempSync(join(tmpdir(), 'animal-store-prod-'));
    try {
      const child = spawn(TSX, [MAIN], {
        cwd: emptyDir,
        env: { ...process.env, NODE_ENV: 'production', API_KEYS: '', DATABASE_URL: '' },
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
