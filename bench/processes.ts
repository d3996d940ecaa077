// Starting, watching and stopping the servers under test. Every child is started in its own
// process group, so stopping it stops exactly what this benchmark started (npm → sh → tsx → node)
// and nothing else on the machine.
import { execSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';

export interface Started {
  name: string;
  child: ChildProcess;
  port: number;
  stderr: () => string;
}

const children = new Set<ChildProcess>();

/** Starts `command` in a process group of its own; its stdout (the service's logs) goes to /dev/null. */
export function startProcess(
  name: string,
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; port: number },
): Started {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    if (stderr.length < 20_000) stderr += chunk.toString();
  });
  child.on('exit', () => children.delete(child));
  return { name, child, port: options.port, stderr: () => stderr };
}

/** Stops a started process group: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopProcess(started: Started, graceMs = 5_000): Promise<void> {
  const { child } = started;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    process.kill(-child.pid!, 'SIGTERM');
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }, graceMs);
  await exited;
  clearTimeout(timer);
}

/** Last resort on exit or on a signal: kill every process group this benchmark started. */
export function killAllStarted(): void {
  for (const child of children) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

export interface HttpAnswer {
  status: number;
  body: string;
}

export function httpCall(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, timeout: 5_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Polls `GET path` every `intervalMs` until it answers 200; returns the milliseconds from `since`
 * (a performance.now() value) to that first answer.
 */
export async function waitForAnswer(
  started: Started,
  path: string,
  headers: Record<string, string>,
  since: number,
  timeoutMs = 30_000,
  intervalMs = 5,
): Promise<number> {
  for (;;) {
    if (started.child.exitCode !== null) throw new Error(`${started.name} exited: ${started.stderr()}`);
    try {
      const answer = await httpCall(started.port, 'GET', path, headers);
      if (answer.status === 200) return performance.now() - since;
    } catch {
      /* not listening yet */
    }
    if (performance.now() - since > timeoutMs)
      throw new Error(`${started.name} gave no answer within ${timeoutMs} ms: ${started.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Every process in the tree under `pid`, parents first. */
export function processTree(pid: number): number[] {
  const all = [pid];
  for (let i = 0; i < all.length; i++) all.push(...childrenOf(all[i]!));
  return all;
}

/** The process that really serves: the deepest one under the started command (npm → sh → tsx → node). */
export function servingPid(started: Started): number {
  const tree = processTree(started.child.pid!);
  return tree[tree.length - 1]!;
}

/** Clock ticks per second, the unit of utime and stime in /proc/<pid>/stat. */
const CLOCK_TICKS = (() => {
  try {
    return Number(execSync('getconf CLK_TCK').toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system) the process has used so far, in seconds (0 once it is gone). */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: count fields from after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of the whole line (utime, stime) are 12 and 13 after the name and state.
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

function statusField(pid: number, field: 'VmHWM' | 'VmRSS'): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Peak RSS between resetPeak() and readPeak(): the kernel's VmHWM, reset through clear_refs
 * (Linux ≥ 4.0). Where the reset is not permitted the figure is the process's lifetime peak, and
 * `resettable` says so.
 */
export class PeakRss {
  resettable = true;
  constructor(readonly pid: number) {}
  resetPeak(): void {
    try {
      writeFileSync(`/proc/${this.pid}/clear_refs`, '5');
    } catch {
      this.resettable = false;
    }
  }
  readPeak(): number {
    return statusField(this.pid, 'VmHWM') ?? 0;
  }
  readCurrent(): number {
    return statusField(this.pid, 'VmRSS') ?? 0;
  }
}
