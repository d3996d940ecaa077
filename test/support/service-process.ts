// The service as a real process, the way `npm start` runs it (tsx src/main.ts), with only the
// settings given: for tests about processes (start-up, several instances on one database).
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx');
const MAIN = join(ROOT, 'src', 'main.ts');

export interface ServiceProcess {
  child: ChildProcess;
  baseUrl: string;
  logs: Array<Record<string, unknown>>;
  /** SIGTERM, and the exit code once it has exited. */
  stop(): Promise<number | null>;
}

/** Starts the service in `cwd` with `env` as its only settings; resolves once it listens. */
export function startServiceProcess(env: Record<string, string>, cwd = ROOT): Promise<ServiceProcess> {
  const { DATABASE_URL: _u, API_KEYS: _k, NODE_ENV: _n, PORT: _p, TEST_DATABASE: _t, ...inherited } = process.env;
  const child = spawn(TSX, [MAIN], { cwd, env: { ...inherited, PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const stop = () =>
    new Promise<number | null>((resolve) => {
      if (child.exitCode !== null) return resolve(child.exitCode);
      child.removeAllListeners('exit');
      child.on('exit', (code) => resolve(code));
      child.kill('SIGTERM');
    });
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no start within 30 s: ${stderr} ${JSON.stringify(logs)}`));
    }, 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        const entry = JSON.parse(line) as Record<string, unknown>;
        logs.push(entry);
        const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(String(entry.msg));
        if (listening) {
          clearTimeout(timer);
          resolve({ child, baseUrl: listening[1]!, logs, stop });
        }
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}: ${stderr}`));
    });
  });
}
