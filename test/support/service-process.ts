// The service as a real process, the way `npm start` runs it, with only the settings given: for
// tests of what only a process can show (start-up, signals, crashes, several instances).
// It must log at info level or lower, or its "listening" line is never seen.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const TSX = join(ROOT, 'node_modules', '.bin', 'tsx');
/** The process entry: checks the Node line, then runs src/main.ts. */
const MAIN = join(ROOT, 'src', 'start.ts');
/**
 * The source run in ONE process, tsx as a loader: the `tsx` command would put a wrapper process
 * in front, which relays signals and, under load, sometimes exits on SIGTERM by itself (143)
 * before the service's own handler has finished: not what a test of signals may measure.
 */
export const FROM_SOURCE: [string, ...string[]] = [process.execPath, '--import', import.meta.resolve('tsx'), MAIN];

export interface ServiceProcess {
  child: ChildProcess;
  baseUrl: string;
  logs: Array<Record<string, unknown>>;
  /** Everything written to stderr so far (where a development key is printed). */
  stderr(): string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  /** SIGTERM, and the exit code once it has exited. */
  stop(): Promise<number | null>;
}

export interface ServiceProcessOptions {
  cwd?: string;
  /** The command line; by default the source (FROM_SOURCE). */
  command?: [string, ...string[]];
  /** Node options put before the rest of the default command line (ignored with `command`). */
  nodeOptions?: string[];
}

/**
 * Every process started here and still running: killed when the test worker exits, however it
 * exits (a failed start beside a good one, a timeout), so that no test leaves a server behind.
 */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts the service with `env` as its only settings (PORT=0: a free port); resolves once it listens. */
export function startServiceProcess(env: Record<string, string>, options: ServiceProcessOptions = {}): Promise<ServiceProcess> {
  const { DATABASE_URL: _u, API_KEYS: _k, NODE_ENV: _n, PORT: _p, LOG_LEVEL: _l, TEST_DATABASE: _t, ...inherited } = process.env;
  const [program, ...args] = options.command ?? [process.execPath, ...(options.nodeOptions ?? []), ...FROM_SOURCE.slice(1)];
  const child = spawn(program, args, {
    cwd: options.cwd ?? ROOT,
    // No drain on SIGTERM unless a test asks for one (the tests of the stop do): the others stop at once.
    env: { ...inherited, PORT: '0', SHUTDOWN_DRAIN_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  running.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  const stop = () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    return exited;
  };
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no start within 60 s: ${stderr} ${JSON.stringify(logs)}`));
    }, 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        let entry: Record<string, unknown>;
        try {
          entry = JSON.parse(line) as Record<string, unknown>;
        } catch {
          continue; // not a log line (npm's own output, say)
        }
        logs.push(entry);
        const listening = /^API listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(String(entry.msg));
        if (listening) {
          clearTimeout(timer);
          resolve({ child, baseUrl: listening[1]!, logs, stderr: () => stderr, exited, stop });
        }
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening: ${stderr} ${JSON.stringify(logs.slice(-3))}`));
    });
  });
}

/** POST /v1/pets with `key`: a pet named `name` in category 1, with an Idempotency-Key when given. */
export function createPet(baseUrl: string, key: string, name: string, idempotencyKey?: string, signal?: AbortSignal): Promise<Response> {
  return fetch(`${baseUrl}/v1/pets`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    },
    body: JSON.stringify({ name, categoryId: 1 }),
    signal,
  });
}
