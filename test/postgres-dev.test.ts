// `npm run db:postgres`: PostgreSQL for development in one command. It starts, prints the
// DATABASE_URL to use (which connects), stops on Ctrl-C (SIGINT), and keeps its data: started
// again, it finds what was written before.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from './support/free-port.js';

let dir: string | undefined;
const running = new Set<ChildProcess>();
afterAll(async () => {
  for (const child of running) child.kill('SIGINT');
  await new Promise((resolve) => setTimeout(resolve, running.size > 0 ? 3_000 : 0));
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Starts `npm run db:postgres` and resolves with its DATABASE_URL line, or fails with its output. */
function start(port: number, folder: string): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn('npm', ['run', '--silent', 'db:postgres', '--', '--port', String(port), '--dir', folder], { stdio: 'pipe' });
  running.add(child);
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no DATABASE_URL within 60 s:\n${output}`)), 60_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /^DATABASE_URL=(postgresql:\/\/\S+)$/m.exec(output)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve({ child, url, output: () => output });
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`db:postgres exited (${code}) before it was ready:\n${output}`));
    });
  });
}

/** Ctrl-C: SIGINT to npm, which hands it on; resolves with the exit code. */
function interrupt(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('exit', (code) => {
      running.delete(child);
      resolve(code);
    });
    child.kill('SIGINT');
  });
}

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('npm run db:postgres', () => {
  it(
    'starts, prints a DATABASE_URL that connects, stops on Ctrl-C, and keeps the data for the next start',
    { timeout: 180_000 },
    async () => {
      dir = await mkdtemp(join(tmpdir(), 'animal-store-db-postgres-'));
      await chmod(dir, 0o755); // run as root, PostgreSQL runs as another user, who must reach the folder
      const folder = join(dir, 'postgres');
      const port = await freePort();

      const first = await start(port, folder);
      expect(first.url).toBe(`postgresql://postgres:postgres@127.0.0.1:${port}/animal_store`);
      expect(first.output()).toMatch(/created and started/);
      await query(first.url, "CREATE TABLE kept (name text); INSERT INTO kept VALUES ('Rex')");
      expect(await interrupt(first.child)).toBe(0);
      expect(first.output()).toMatch(/PostgreSQL stopped\./);
      await expect(query(first.url, 'SELECT 1')).rejects.toThrow(); // really stopped

      const second = await start(port, folder);
      expect(second.output()).not.toMatch(/created/);
      expect(await query(second.url, 'SELECT name FROM kept')).toEqual([{ name: 'Rex' }]);
      expect(await interrupt(second.child)).toBe(0);
    },
  );
});
