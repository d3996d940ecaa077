// The service as a real process (`tsx src/main.ts`, exactly what `npm start` runs), for tests of
// what only a process can show: start-up, signals, crashes, several instances.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const TSX = join(ROOT, 'node_modules', '.bin', 'tsx');
export const MAIN = join(ROOT, 'src', 'main.ts');

export interface ServiceProcess {
  child: ChildProcess;
  baseUrl: string;
  logs: Array<Record<string, unknown>>;
  stderr(): string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
}

/** Starts the service with only `env` as settings (PORT=0: a free port), in `cwd`. It must log at info level (or lower) for its "listening" line to be seen. */
export function spawnService(env: Record<string, string>, cwd = ROOT): Promise<ServiceProcess> {
  const { DATABASE_URL: _u, API_KEYS: _k, NODE_ENV: _n, PORT: _p, LOG_LEVEL: _l, ...inherited } = process.env;
  const child = spawn(TSX, [MAIN], { cwd, env: { ...inherited, PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`no start within 20 s: ${stderr}`)), 20_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        let entry: Record<string, unknown>;
        try {
          entry = JSON.parse(line) as Record<string, unknown>;
        } catch {
          continue;
        }
        logs.push(entry);
        const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(String(entry.msg));
        if (listening) {
          clearTimeout(timer);
          resolve({ child, baseUrl: listening[1]!, logs, stderr: () => stderr, exited });
        }
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening: ${stderr}`));
    });
  });
}
