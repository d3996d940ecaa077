// An nginx of the test's own (Debian's `nginx-light`, 1.22 on our machines) on a free port of
// 127.0.0.1, running the config docs/operations.md gives ("Stopping behind a load balancer", the
// ```nginx block) with the test's instances in its `upstream` block. Its own main config, pid file
// and error log in a temporary directory; run in the foreground as a child process and stopped by
// its pid. Without the `nginx` program it fails, loudly.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './free-port.js';
import { operationsDocBlock, replaceIn } from './operations-doc.js';

const HOW_TO_GET_NGINX =
  'nginx is needed for the balancer tests (npm run test:nginx): install the `nginx` program (Debian: ' +
  '`apt-get install nginx-light`, which puts it in /usr/sbin; `bash .ci/run` does it).';

export interface PrivateNginx {
  port: number;
  baseUrl: string;
  stop(): Promise<void>;
}

/** Every nginx started here and still running: killed when the process exits, however it exits. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** The `nginx` program: on PATH, or where Debian installs it (/usr/sbin, not on a user's PATH). */
function nginxProgram(): string {
  for (const program of ['nginx', '/usr/sbin/nginx']) {
    const probe = spawnSync(program, ['-v']);
    if (!probe.error && probe.status === 0) return program;
  }
  throw new Error(HOW_TO_GET_NGINX);
}

/** The docs' http-level config with the test's upstream servers and listening address. */
function nginxConfigFromDocs(ports: number[], listenPort: number): string {
  let config = operationsDocBlock('nginx');
  config = replaceIn(config, /^(\s*)server 10\.0\.0\.\d+:3000;\n(?:\s*server 10\.0\.0\.\d+:3000;\n)*/m, (_match, indent) =>
    ports.map((port) => `${indent}server 127.0.0.1:${port};\n`).join(''),
  );
  return replaceIn(config, /^(\s*)listen 80;$/m, `$1listen 127.0.0.1:${listenPort};`);
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port`. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/**
 * Starts nginx with the docs' config over instances on 127.0.0.1 at `ports` (in that order in the
 * `upstream` block), with `workers` worker processes (Debian's `auto`: one per core); resolves once
 * it accepts connections.
 */
export async function startPrivateNginx(options: { ports: number[]; workers?: number }): Promise<PrivateNginx> {
  const program = nginxProgram();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-nginx-'));
  const errorLog = join(dir, 'error.log');
  const config = join(dir, 'nginx.conf');
  // The main context is the test's (where nginx.conf's Debian defaults would be); `http { }` holds
  // the docs' block as written.
  writeFileSync(
    config,
    [
      'daemon off;',
      `worker_processes ${options.workers ?? 2};`,
      `pid ${join(dir, 'nginx.pid')};`,
      `error_log ${errorLog} info;`,
      'events { worker_connections 1024; }',
      'http {',
      '  access_log off;',
      nginxConfigFromDocs(options.ports, port),
      '}',
      '',
    ].join('\n'),
  );
  const child = spawn(program, ['-e', errorLog, '-p', dir, '-c', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  running.add(child);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const readLog = () => (existsSync(errorLog) ? readFileSync(errorLog, 'utf8') : '');
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(5_000)]);
      child.kill('SIGKILL');
    }
    running.delete(child);
    rmSync(dir, { recursive: true, force: true });
  };
  // Up once its port accepts a connection (no request: that would take a turn of its round robin).
  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      const log = readLog();
      await stop();
      throw new Error(`nginx did not start (${child.exitCode ?? 'no connection within 10 s'}): ${stderr} ${log}`);
    }
    await sleep(50);
  }
  return { port, baseUrl: `http://127.0.0.1:${port}`, stop };
}
