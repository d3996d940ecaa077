// An HAProxy of the test's own (Debian's `haproxy`, 2.6 on our machines) on a free port of
// 127.0.0.1, running the config docs/operations.md gives ("Stopping behind a load balancer", the
// ```haproxy block, read from the page) with the test's servers and check interval: HTTP
// keep-alive on both sides, `option httpchk GET /readyz`, connection failures retried on another
// server, the client's address in X-Forwarded-For. Its own config, pidfile and admin socket in a temporary directory; started with
// `haproxy -D` and stopped by its pid. Without the `haproxy` program it fails, loudly.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './free-port.js';
import { operationsDocBlock, replaceIn } from './operations-doc.js';

const HOW_TO_GET_HAPROXY =
  'HAProxy is needed for the balancer tests (npm run test:haproxy): install the `haproxy` program (Debian: ' +
  '`apt-get install haproxy`, which puts it in /usr/sbin; `bash .ci/run` does it).';

interface BackendServer {
  /** Its name in the backend (`s1`…). */
  name: string;
  port: number;
  /** Added in maintenance, to be enabled later (a replacement in a rolling deploy). */
  disabled?: boolean;
}

export interface PrivateHaproxyOptions {
  servers: BackendServer[];
  /** The health checks: `default-server inter … fall … rise …` (docs/operations.md's by default). */
  check?: { inter: string; fall: number; rise: number };
}

export interface PrivateHaproxy {
  port: number;
  baseUrl: string;
  /** Each server's state as HAProxy sees it (`UP`, `DOWN`, `MAINT`, `UP 1/2`…), from `show stat`. */
  states(): Promise<Record<string, string>>;
  /** Resolves once server `name` is in `state` (exactly); fails after `ms`. */
  waitFor(name: string, state: string, ms?: number): Promise<void>;
  /** Takes server `name` out of maintenance (an operator adding a replacement). */
  enable(name: string): Promise<void>;
  stop(): Promise<void>;
}

/** The name of HAProxy's backend in the docs' config. */
const BACKEND = 'animal_store';

/** Every HAProxy started here and still running (its pid): killed when the process exits, however it exits. */
const running = new Set<number>();
process.once('exit', () => {
  for (const pid of running) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** The `haproxy` program: on PATH, or where Debian installs it (/usr/sbin, not on a user's PATH). */
function haproxyProgram(): string {
  for (const program of ['haproxy', '/usr/sbin/haproxy']) {
    const probe = spawnSync(program, ['-v']);
    if (!probe.error && probe.status === 0) return program;
  }
  throw new Error(HOW_TO_GET_HAPROXY);
}

/** One command on HAProxy's admin socket; its whole answer. */
function command(socketPath: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let answer = '';
    socket.setTimeout(5_000, () => socket.destroy(new Error(`no answer from HAProxy's socket to "${text}"`)));
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.once('end', () => resolve(answer));
    socket.once('error', reject);
    socket.end(`${text}\n`);
  });
}

export async function startPrivateHaproxy(options: PrivateHaproxyOptions): Promise<PrivateHaproxy> {
  const program = haproxyProgram();
  const { inter, fall, rise } = options.check ?? { inter: '1s', fall: 2, rise: 2 };
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-haproxy-'));
  const config = join(dir, 'haproxy.cfg');
  const pidFile = join(dir, 'haproxy.pid');
  const adminSocket = join(dir, 'admin.sock');
  // The global section is the test's (its pidfile and admin socket); the rest is the docs' block as
  // written, with the test's address, servers and check interval.
  let proxied = operationsDocBlock('haproxy');
  proxied = replaceIn(proxied, /^(\s*)bind :80$/m, `$1bind 127.0.0.1:${port}`);
  proxied = replaceIn(
    proxied,
    /^(\s*)default-server inter \S+ fall \d+ rise \d+$/m,
    `$1default-server inter ${inter} fall ${fall} rise ${rise}`,
  );
  proxied = replaceIn(
    proxied,
    /^(\s*)server app\d+ 10\.0\.0\.\d+:3000 check\n(?:\s*server app\d+ 10\.0\.0\.\d+:3000 check\n)*/m,
    (_match, indent) =>
      options.servers
        .map((server) => `${indent}server ${server.name} 127.0.0.1:${server.port} check${server.disabled ? ' disabled' : ''}\n`)
        .join(''),
  );
  writeFileSync(
    config,
    ['global', `  pidfile ${pidFile}`, `  stats socket ${adminSocket} mode 600 level admin`, '  maxconn 2000', proxied].join('\n'),
  );
  // -D: it forks into the background once its config is read and its port bound; errors before
  // that are on stderr, with a non-zero exit.
  const started = spawnSync(program, ['-D', '-f', config], { timeout: 10_000, encoding: 'utf8' });
  if (started.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`haproxy did not start (${started.status ?? started.error?.message}): ${started.stderr}`);
  }
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  running.add(pid);

  const states = async (): Promise<Record<string, string>> => {
    const csv = await command(adminSocket, 'show stat');
    const [header, ...rows] = csv.replace(/^# /, '').trim().split('\n');
    const columns = header!.split(',');
    const [proxy, server, status] = ['pxname', 'svname', 'status'].map((name) => columns.indexOf(name));
    return Object.fromEntries(
      rows
        .map((row) => row.split(','))
        .filter((cells) => cells[proxy!] === BACKEND && !['FRONTEND', 'BACKEND'].includes(cells[server!]!))
        .map((cells) => [cells[server!]!, cells[status!]!]),
    );
  };
  return {
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    states,
    async waitFor(name, state, ms = 15_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const seen = (await states())[name];
        if (seen === state) return;
        if (Date.now() > deadline) throw new Error(`HAProxy's server ${name} is ${seen}, not ${state}, after ${ms} ms`);
        await sleep(50);
      }
    },
    async enable(name) {
      await command(adminSocket, `enable server ${BACKEND}/${name}`);
    },
    async stop() {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // already gone
      }
      for (let waited = 0; waited < 5_000; waited += 50) {
        try {
          process.kill(pid, 0);
        } catch {
          break; // gone
        }
        await sleep(50);
      }
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
      running.delete(pid);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
