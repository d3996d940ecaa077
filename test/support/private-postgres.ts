// A throwaway PostgreSQL cluster of the test's own (initdb + pg_ctl on a free port), for tests
// that stop and start the server under a running service: the machine's shared server must never
// be stopped by a test. Runs as the `postgres` user when the tests run as root (PostgreSQL
// refuses to run as root), with its data directory in a temporary directory that user owns.
import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Each pg_ctl/initdb step is bounded: a wedged server fails the test instead of hanging it. */
const STEP_TIMEOUT_MS = 60_000;

export interface PrivatePostgres {
  port: number;
  /** A URL for database `name` on this cluster (`postgres` exists from the start). */
  url(name?: string): string;
  start(): Promise<void>;
  /** Stops the server the way an operator or a crash-restart would: active connections are cut. */
  stop(): Promise<void>;
  /** Stops it if running and deletes its files. */
  destroy(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function uidOf(user: string): Promise<{ uid: number; gid: number }> {
  const [{ stdout: uid }, { stdout: gid }] = await Promise.all([run('id', ['-u', user]), run('id', ['-g', user])]);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-pg-'));
  if (asRoot) {
    const { uid, gid } = await uidOf('postgres');
    chownSync(dir, uid, gid);
  }
  const tool = (command: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', command, ...args], { timeout: STEP_TIMEOUT_MS })
      : run(command, args, { timeout: STEP_TIMEOUT_MS });

  const data = join(dir, 'data');
  const port = await freePort();
  // fsync off: the data is thrown away, and the disk is shared with other work.
  const serverOptions = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off`;
  await tool('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);

  let running = false;
  const cluster: PrivatePostgres = {
    port,
    url: (name = 'postgres') => `postgresql://postgres@127.0.0.1:${port}/${name}`,
    async start() {
      await tool('pg_ctl', ['-D', data, '-o', serverOptions, '-l', join(dir, 'server.log'), '-w', '-t', '30', 'start']);
      running = true;
    },
    async stop() {
      await tool('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop']);
      running = false;
    },
    async destroy() {
      if (running) await cluster.stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}
