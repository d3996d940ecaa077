// `npx tsx bench/profile.ts`: where a request's microseconds go, beyond the bare floor's. For each
// scenario (REST list of 20, create, get; SQLite, 1,000 rows), the service as shipped (`node
// dist/start.js`, production settings as in npm run bench; build first) and the bare baseline
// (bench/baseline-server.ts) are each warmed up, then CPU-profiled through the inspector (V8's
// sampling profiler, 100 µs) for the length of one load run (wrk -t1 -c32 or autocannon), so start-up
// and warm-up stay out of the profile. Prints self time per request by area for both, and the
// service's hottest functions, in µs per request. PROFILE_SECONDS (10), PROFILE_TOP (30),
// PROFILE_DIR (keep the .cpuprofile files there), PROFILE_AGAINST=nestjs (the NestJS peer,
// bench/peers/nestjs, in the baseline's place), PROFILE_ONLY (the scenarios whose label contains it,
// tRPC's included; default the REST list, create and get), PROFILE_POSTGRES_URL (a server where one
// may CREATE DATABASE, by its Unix socket, since the load runs in a network namespace: the service and
// the baseline on PostgreSQL, each on a fresh database).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/support/free-port.js';
import { load, pickGenerator, type Request } from './load.js';
import { cpuSeconds, startProcess, stopProcess, waitForAnswer, type Started } from './processes.js';
import { summarise, type Profile, type Summary } from './profile-summary.js';
import { buildNestPeer } from './peers.js';
import { API_KEY, AUTH, restScenarios, SCENARIOS as ALL_SCENARIOS, serviceEnv } from './requests.js';
import { freshPostgresDatabase, seedPets, seedPostgresPets } from './seed.js';
import { runInNetworkNamespace } from './network-namespace.js';

runInNetworkNamespace();

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 10);
const TOP = Number(process.env.PROFILE_TOP ?? 30);
const ONLY = process.env.PROFILE_ONLY;
const SCENARIOS = ONLY ? ALL_SCENARIOS.filter(({ label }) => label.includes(ONLY)) : restScenarios(undefined);
const POSTGRES_URL = process.env.PROFILE_POSTGRES_URL;
/** What the service is compared with: the bare baseline, or the NestJS peer. */
const AGAINST = process.env.PROFILE_AGAINST === 'nestjs' ? 'nestjs' : 'baseline';

/** The NestJS peer as bench/peers.ts builds and starts it (`buildNestPeer` compiles it first). */
const NEST_ENTRY = join('dist', 'bench-peers', 'nestjs', 'bench', 'peers', 'nestjs', 'main.js');
const NEST_MIGRATIONS = join(ROOT, 'prisma', 'sqlite', 'migrations');

const workDir = mkdtempSync(join(tmpdir(), 'animal-store-profile-'));
const generator = pickGenerator(ROOT, process.env.BENCH_GENERATOR);

/** The inspector's WebSocket address, which Node prints on stderr at start (`--inspect=127.0.0.1:0`). */
async function inspectorUrl(started: Started): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const url = /Debugger listening on (ws:\/\/\S+)/.exec(started.stderr())?.[1];
    if (url) return url;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${started.name}: no inspector address: ${started.stderr()}`);
}

/** A minimal Chrome DevTools Protocol session: one command at a time. */
async function devtools(url: string): Promise<{ send(method: string, params?: object): Promise<unknown>; close(): void }> {
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  let id = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) waiting.get(message.id)?.(message.result);
  };
  return {
    send: (method, params = {}) =>
      new Promise((resolve) => {
        waiting.set(++id, resolve);
        socket.send(JSON.stringify({ id, method, params }));
      }),
    close: () => socket.close(),
  };
}

type System = 'service' | 'baseline' | 'nestjs';

/** A SQLite file, or a fresh database on PROFILE_POSTGRES_URL's server (its URL). */
async function databaseFor(name: string): Promise<string> {
  if (!POSTGRES_URL) return join(workDir, `${name}.db`);
  return freshPostgresDatabase(POSTGRES_URL, `animal_store_profile_${name}`);
}

async function startSystem(system: System, file: string): Promise<Started> {
  if (POSTGRES_URL && system === 'nestjs') throw new Error('PROFILE_AGAINST=nestjs runs on SQLite only');
  const port = await freePort();
  const common = { PATH: process.env.PATH, HOME: process.env.HOME, API_KEYS: API_KEY };
  const started =
    system === 'service'
      ? startProcess('service', process.execPath, ['--inspect=127.0.0.1:0', 'dist/start.js'], {
          cwd: ROOT,
          port,
          env: serviceEnv({ port, databaseUrl: POSTGRES_URL ? file : `file:${file}` }),
        })
      : system === 'nestjs'
        ? startProcess('nestjs', process.execPath, ['--inspect=127.0.0.1:0', NEST_ENTRY], {
            cwd: ROOT,
            port,
            env: { ...common, NODE_ENV: 'production', PEER_PORT: String(port), PEER_DB: file, PEER_MIGRATIONS: NEST_MIGRATIONS },
          })
        : startProcess('baseline', process.execPath, ['--inspect=127.0.0.1:0', '--import', 'tsx', 'bench/baseline-server.ts'], {
            cwd: ROOT,
            port,
            env: { ...common, BASELINE_PORT: String(port), BASELINE_DB: file },
          });
  await waitForAnswer(started, '/v1/pets?limit=1', AUTH, performance.now());
  return started;
}

/** Warm-up, then one profiled load run; returns the profile's summary and the requests answered. */
async function profile(
  system: System,
  label: string,
  request: Request,
): Promise<{ summary: Summary; requests: number; cpuMicrosPerRequest: number }> {
  const file = await databaseFor(`${system}-${label}`);
  const started = await startSystem(system, file);
  try {
    if (POSTGRES_URL) await seedPostgresPets(file, 1_000);
    else seedPets(file, 1_000);
    await load(generator, ROOT, workDir, started.port, request, { seconds: 3, connections: 32 });
    const session = await devtools(await inspectorUrl(started));
    await session.send('Profiler.enable');
    await session.send('Profiler.setSamplingInterval', { interval: 100 });
    await session.send('Profiler.start');
    const cpuBefore = cpuSeconds(started.child.pid!);
    const result = await load(generator, ROOT, workDir, started.port, request, { seconds: SECONDS, connections: 32 });
    const cpu = cpuSeconds(started.child.pid!) - cpuBefore;
    const { profile: taken } = (await session.send('Profiler.stop')) as { profile: Profile };
    session.close();
    if (process.env.PROFILE_DIR)
      writeFileSync(join(process.env.PROFILE_DIR, `${system}-${label.replace(/\W+/g, '-')}.cpuprofile`), JSON.stringify(taken));
    return { summary: summarise(taken), requests: result.requests, cpuMicrosPerRequest: (cpu * 1e6) / result.requests };
  } finally {
    await stopProcess(started);
  }
}

/**
 * The sampling profiler counts wall time: on a shared machine a process that waits for a CPU
 * leaves its samples on whatever it was running. Each area's share of the busy (non-idle) samples
 * is therefore applied to the CPU time the process really used per request (/proc/<pid>/stat).
 */
function microsPerRequest(run: { summary: Summary; cpuMicrosPerRequest: number }): (time: number | undefined) => string {
  const busy = run.summary.total - (run.summary.byArea.get('(idle)') ?? 0);
  return (time) => (((time ?? 0) / busy) * run.cpuMicrosPerRequest).toFixed(1);
}

try {
  if (AGAINST === 'nestjs') buildNestPeer(ROOT);
  for (const { label, request } of SCENARIOS) {
    const service = await profile('service', label, request);
    const baseline = await profile(AGAINST, label, request);
    const [mine, bare] = [microsPerRequest(service), microsPerRequest(baseline)];
    console.log(
      `\n## ${label}: CPU per request: service ${service.cpuMicrosPerRequest.toFixed(0)} µs (${service.requests} requests), ${AGAINST} ${baseline.cpuMicrosPerRequest.toFixed(0)} µs (${baseline.requests})`,
    );
    console.log(`| area | service µs/req | ${AGAINST} µs/req |`);
    console.log('|---|---|---|');
    const areas = [...service.summary.byArea].filter(([name]) => name !== '(idle)').sort((a, b) => b[1] - a[1]);
    for (const [name, time] of areas.slice(0, 20)) console.log(`| ${name} | ${mine(time)} | ${bare(baseline.summary.byArea.get(name))} |`);
    console.log(`\nservice, hottest ${TOP} functions (self µs/req)`);
    const functions = [...service.summary.byFunction].filter(([name]) => !name.startsWith('(idle)')).sort((a, b) => b[1] - a[1]);
    for (const [name, time] of functions.slice(0, TOP)) console.log(`  ${mine(time).padStart(6)}  ${name}`);
    console.log(`\n${AGAINST}, hottest 10 functions (self µs/req)`);
    const floor = [...baseline.summary.byFunction].filter(([name]) => !name.startsWith('(idle)')).sort((a, b) => b[1] - a[1]);
    for (const [name, time] of floor.slice(0, 10)) console.log(`  ${bare(time).padStart(6)}  ${name}`);
  }
} finally {
  rmSync(workDir, { recursive: true, force: true });
}
