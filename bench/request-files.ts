// `npx tsx bench/request-files.ts [dist-dir]`: which project files run code for one request, in the
// service as shipped (`node <dist-dir>/start.js`, dist/ by default, SQLite with 1,000 rows). V8's
// precise coverage through the inspector: after a warm-up, the counts are reset, ONE request is
// sent, and every project file with a function that ran is listed. A REST list and a tRPC list
// (the bench's scenarios). The measure of issue 37's "a request through at most 12 files".
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort } from '../test/support/free-port.js';
import { httpCall, startProcess, stopProcess, waitForAnswer } from './processes.js';
import { AUTH, SCENARIOS, serviceEnv } from './requests.js';
import { seedPets } from './seed.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MEASURED = ['REST list limit=20', 'tRPC list limit=20'];
const WARM_UP = 300;

/** A minimal Chrome DevTools Protocol client over Node's WebSocket. */
async function inspector(url: string) {
  const socket = new WebSocket(url);
  await new Promise((resolveOpen, reject) => {
    socket.onopen = resolveOpen;
    socket.onerror = reject;
  });
  let nextId = 1;
  const waiting = new Map<number, { settle: (result: unknown) => void; fail: (error: Error) => void }>();
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: unknown };
    const call = message.id === undefined ? undefined : waiting.get(message.id);
    if (message.error) call?.fail(new Error(JSON.stringify(message.error)));
    else call?.settle(message.result);
  };
  return {
    send: <T>(method: string, params: Record<string, unknown> = {}) =>
      new Promise<T>((settle, fail) => {
        const id = nextId++;
        waiting.set(id, { settle: settle as (result: unknown) => void, fail });
        socket.send(JSON.stringify({ id, method, params }));
      }),
    close: () => socket.close(),
  };
}

interface ScriptCoverage {
  url: string;
  functions: { functionName: string; ranges: { count: number }[] }[];
}

export interface RequestFiles {
  label: string;
  method: string;
  path: string;
  status: number;
  /** Project files with a function that ran, and the names of those functions (anonymous ones unnamed). */
  files: { file: string; ran: string[] }[];
}

/** Starts the service by `entry` (a script, with Node's flags before it) with an inspector, and measures each scenario. */
export async function measureRequestFiles(entry: readonly string[]): Promise<RequestFiles[]> {
  const workDir = mkdtempSync(join(tmpdir(), 'animal-store-files-'));
  const port = await freePort();
  const started = startProcess('service', process.execPath, ['--inspect=127.0.0.1:0', ...entry], {
    cwd: ROOT,
    env: serviceEnv({ port, databaseUrl: `file:${join(workDir, 'pets.db')}` }),
    port,
  });
  const measured: RequestFiles[] = [];
  try {
    await waitForAnswer(started, '/v1/pets?limit=1', AUTH, performance.now());
    seedPets(join(workDir, 'pets.db'), 1_000);
    const wsUrl = /ws:\/\/\S+/.exec(started.stderr())?.[0];
    if (!wsUrl) throw new Error(`no inspector address in: ${started.stderr()}`);
    const cdp = await inspector(wsUrl);
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    for (const label of MEASURED) {
      const { request } = SCENARIOS.find((scenario) => scenario.label === label)!;
      const call = () => httpCall(port, request.method, request.path, request.headers, request.body);
      for (let i = 0; i < WARM_UP; i++) await call();
      await new Promise((settle) => setTimeout(settle, 50));
      await cdp.send('Profiler.takePreciseCoverage'); // resets the counts
      const answer = await call();
      await new Promise((settle) => setTimeout(settle, 20)); // the log line and the metrics
      const { result } = await cdp.send<{ result: ScriptCoverage[] }>('Profiler.takePreciseCoverage');
      const files = result
        .filter(({ url }) => url.startsWith('file://') && !url.includes('/node_modules/'))
        .map(({ url, functions }) => ({
          file: relative(ROOT, fileURLToPath(url)),
          ran: functions.filter((fn) => fn.ranges[0]!.count > 0 && fn.functionName !== '').map((fn) => fn.functionName),
          any: functions.some((fn) => fn.ranges[0]!.count > 0),
        }))
        .filter(({ any }) => any)
        .map(({ file, ran }) => ({ file, ran }))
        .sort((a, b) => a.file.localeCompare(b.file));
      measured.push({ label, method: request.method, path: request.path, status: answer.status, files });
    }
    cdp.close();
  } finally {
    await stopProcess(started);
    rmSync(workDir, { recursive: true, force: true });
  }
  return measured;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const distDir = resolve(ROOT, process.argv[2] ?? 'dist');
  for (const { label, method, path, status, files } of await measureRequestFiles([join(distDir, 'start.js')])) {
    console.log(`\n${label}: ${method} ${path} → ${status}; ${files.length} project files ran code`);
    for (const { file, ran } of files) console.log(`  ${file.padEnd(44)} ${ran.slice(0, 6).join(', ')}${ran.length > 6 ? ', …' : ''}`);
  }
}
