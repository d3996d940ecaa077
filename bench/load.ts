// The load generator: wrk when it is installed (it uses the least CPU, which matters on a 2-core
// machine where it competes with the server), else autocannon from node_modules. Both run as a
// child process with the same settings for the service and the baseline.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Request {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface LoadResult {
  /** Requests completed during the run. */
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses that were not 2xx/3xx, plus socket errors and timeouts. */
  errors: number;
}

export interface LoadOptions {
  seconds: number;
  connections: number;
}

export type Generator = 'wrk' | 'autocannon';

export function pickGenerator(root: string, preferred?: string): Generator {
  if (preferred === 'autocannon' || preferred === 'wrk') return preferred;
  if (spawnSync('wrk', ['--version']).error === undefined) return 'wrk';
  if (existsSync(autocannonBin(root))) return 'autocannon';
  throw new Error('Neither wrk (apt-get install -y wrk) nor autocannon (npm ci) is available');
}

const autocannonBin = (root: string) => join(root, 'node_modules', '.bin', 'autocannon');

function luaString(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** A wrk script for one request, whose done() prints the figures as one JSON line. */
function wrkScript(request: Request): string {
  const headers = Object.entries(request.headers).map(([name, value]) => `wrk.headers[${luaString(name)}] = ${luaString(value)}`);
  return [
    `wrk.method = ${luaString(request.method)}`,
    request.body === undefined ? '' : `wrk.body = ${luaString(request.body)}`,
    ...headers,
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format(\'BENCH {"requests":%d,"duration_us":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\\n\',',
    '    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,',
    '    latency:percentile(50), latency:percentile(99)))',
    'end',
  ].join('\n');
}

function run(command: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    // A generator that hangs must not hang the benchmark.
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${command} exited with ${code}: ${err || out}`));
    });
  });
}

export async function load(
  generator: Generator,
  root: string,
  workDir: string,
  port: number,
  request: Request,
  options: LoadOptions,
): Promise<LoadResult> {
  const url = `http://127.0.0.1:${port}${request.path}`;
  const timeoutMs = (options.seconds + 30) * 1000;
  if (generator === 'wrk') {
    const script = join(workDir, 'wrk-request.lua');
    writeFileSync(script, wrkScript(request));
    // One wrk thread: on 2 cores the generator should take as little CPU from the server as it can.
    const out = await run(
      'wrk',
      ['-t1', `-c${options.connections}`, `-d${options.seconds}s`, '--timeout', '5s', '-s', script, url],
      timeoutMs,
    );
    const line = out.split('\n').find((text) => text.startsWith('BENCH '));
    if (!line) throw new Error(`wrk printed no figures: ${out}`);
    const figures = JSON.parse(line.slice('BENCH '.length)) as {
      requests: number;
      duration_us: number;
      errors: number;
      p50_us: number;
      p99_us: number;
    };
    return {
      requests: figures.requests,
      requestsPerSecond: figures.requests / (figures.duration_us / 1e6),
      p50Ms: figures.p50_us / 1000,
      p99Ms: figures.p99_us / 1000,
      errors: figures.errors,
    };
  }
  const args = ['-c', String(options.connections), '-d', String(options.seconds), '-m', request.method, '--json'];
  for (const [name, value] of Object.entries(request.headers)) args.push('-H', `${name}=${value}`);
  if (request.body !== undefined) args.push('-b', request.body);
  const out = await run(autocannonBin(root), [...args, url], timeoutMs);
  const figures = JSON.parse(out) as {
    requests: { total: number };
    duration: number;
    latency: { p50: number; p99: number };
    errors: number;
    timeouts: number;
    non2xx: number;
  };
  return {
    requests: figures.requests.total,
    requestsPerSecond: figures.requests.total / figures.duration,
    p50Ms: figures.latency.p50,
    p99Ms: figures.latency.p99,
    errors: figures.errors + figures.timeouts + figures.non2xx,
  };
}
