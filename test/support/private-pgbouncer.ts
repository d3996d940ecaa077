// A PgBouncer of the test's own (Debian's `pgbouncer`, 1.18 on our machines) on a free port in
// front of a PostgreSQL server, in transaction pooling: the way operators scale the service out.
// Its own ini, userlist and log in a temporary directory; as root it runs as an unprivileged user
// (PgBouncer refuses to run as root). Without the `pgbouncer` program it fails, loudly.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './free-port.js';

const HOW_TO_GET_PGBOUNCER =
  'PgBouncer is needed for the transaction-pooling tests: install the `pgbouncer` program (Debian: ' +
  '`apt-get install pgbouncer`, which puts it in /usr/sbin; `bash .ci/run` does it).';

/** Users that may run PgBouncer when the tests run as root, the first that exists. */
const UNPRIVILEGED_USERS = ['postgres', 'nobody'];
const START_TIMEOUT_MS = 10_000;

export interface PrivatePgBouncerOptions {
  /** Server connections per database and user: few, so that clients share them (the point of the pooler). */
  poolSize?: number;
  /** `transaction` (the default) or `session`. */
  poolMode?: 'transaction' | 'session';
  /**
   * Startup parameters it accepts and ignores besides `extra_float_digits` and `options`; it refuses
   * the connection for any other it does not know (`statement_timeout`, say).
   */
  ignoreStartupParameters?: string[];
  /**
   * Seconds it waits after a failed server login before it tries again (`server_login_retry`;
   * PgBouncer's default, 15, when unset). docs/operations.md sets 1.
   */
  serverLoginRetry?: number;
}

export interface PrivatePgBouncer {
  port: number;
  /** The URL of database `name` through the pooler (as given to the service: add `pgbouncer=true` yourself). */
  url(name: string): string;
  /** PgBouncer's own log so far (for a failing test's message). */
  log(): string;
  stop(): Promise<void>;
}

/** Every PgBouncer started here and still running: killed when the process exits, however it exits. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** The `pgbouncer` program: on PATH, or where Debian installs it (/usr/sbin, not on a user's PATH). */
function pgbouncerProgram(): string {
  for (const program of ['pgbouncer', '/usr/sbin/pgbouncer']) {
    const probe = spawnSync(program, ['--version']);
    if (!probe.error && probe.status === 0) return program;
  }
  throw new Error(HOW_TO_GET_PGBOUNCER);
}

function unprivilegedUser(): { uid: number; gid: number } {
  for (const name of UNPRIVILEGED_USERS) {
    const uid = spawnSync('id', ['-u', name]);
    const gid = spawnSync('id', ['-g', name]);
    if (uid.status === 0 && gid.status === 0) return { uid: Number(String(uid.stdout).trim()), gid: Number(String(gid.stdout).trim()) };
  }
  throw new Error(`Running as root, and none of the users ${UNPRIVILEGED_USERS.join(', ')} exists to run PgBouncer as.`);
}

/** Resolves once something accepts TCP connections on 127.0.0.1:`port`. */
async function listening(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`pgbouncer exited at start: ${log()}`);
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (accepted) return;
    if (Date.now() > deadline) throw new Error(`pgbouncer did not listen within ${START_TIMEOUT_MS} ms: ${log()}`);
    await sleep(20);
  }
}

/** Starts PgBouncer in front of the server `serverUrl` points at (its host, port, user and password). */
export async function startPrivatePgBouncer(serverUrl: string, options: PrivatePgBouncerOptions = {}): Promise<PrivatePgBouncer> {
  const program = pgbouncerProgram();
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username) || 'postgres';
  const password = decodeURIComponent(server.password);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-pgbouncer-'));
  const logFile = join(dir, 'pgbouncer.log');
  const ini = join(dir, 'pgbouncer.ini');
  // The server side logs in as the URL's user (with its password, if any); clients are trusted.
  const serverLogin = `host=${server.hostname} port=${server.port || 5432} user=${user}${password ? ` password=${password}` : ''}`;
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n`);
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = ${serverLogin}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.poolSize ?? 5}`,
      'max_client_conn = 500',
      `ignore_startup_parameters = ${['extra_float_digits', 'options', ...(options.ignoreStartupParameters ?? [])].join(',')}`,
      ...(options.serverLoginRetry === undefined ? [] : [`server_login_retry = ${options.serverLoginRetry}`]),
      `logfile = ${logFile}`,
      '',
    ].join('\n'),
  );
  const runAs = process.getuid?.() === 0 ? unprivilegedUser() : undefined;
  if (runAs) chownSync(dir, runAs.uid, runAs.gid); // it writes its log there
  // Started as that user directly (no runuser in between), so that killing the child kills PgBouncer.
  const child = spawn(program, [ini], { stdio: ['ignore', 'ignore', 'pipe'], uid: runAs?.uid, gid: runAs?.gid });
  running.add(child);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    if (stderr.length < 20_000) stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child);
      resolve();
    }),
  );
  const log = () => {
    let text = stderr;
    try {
      text += readFileSync(logFile, 'utf8');
    } catch {
      // not written yet
    }
    return text.slice(-8_000);
  };
  try {
    await listening(port, child, log);
  } catch (error) {
    child.kill('SIGKILL');
    await exited;
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    port,
    url: (name) => {
      const url = new URL(serverUrl);
      url.port = String(port);
      url.hostname = '127.0.0.1';
      url.password = '';
      url.pathname = `/${name}`;
      return url.href;
    },
    log,
    async stop() {
      // SIGINT would wait for the clients to go; SIGTERM stops at once (PgBouncer 1.18).
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
