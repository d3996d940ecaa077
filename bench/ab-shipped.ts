// `npx tsx bench/ab-shipped.ts <dist-dir>…`: changes before/after, as shipped, beside NestJS. Copy
// dist/ aside before each change (`cp -r dist dist-before`), make it, `npm run build`, then run
// this with the copies, oldest first: each copy (`node <dir>/start.js`), the service from dist/
// and the NestJS peer, each on its own SQLite file with 1,000 rows, started as `npm start` runs it
// (no NODE_OPTIONS, production settings as in npm run bench), are loaded in turn on the REST list,
// create and get and the tRPC list (NestJS has no tRPC: services only) (wrk -t1 -c32), each system's
// AB_SECONDS of a scenario in AB_TURNS turns, the order rotating turn by turn and round by round, as
// npm run bench loads (the shared machine's speed moves within seconds), in a network namespace
// (bench/network-namespace.ts). Every round starts
// each system afresh and warms it up: instances of one build differ by several percent in CPU a request,
// so a round's figures are one instance's. AB_POSTGRES_URL (a
// server where one may CREATE DATABASE, by its Unix socket: ?host=/var/run/postgresql): the services
// on PostgreSQL instead, a database each, without the peer (which serves SQLite only). Prints per scenario the
// medians (min–max) of req/s and CPU µs a request, and each system's req/s ÷ the first's and ÷
// NestJS's per round. AB_ROUNDS (5), AB_SECONDS (4), AB_TURNS (4, of a whole second at least), AB_ONLY (list,
// create or get).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/support/free-port.js';
import { median, medianCell } from './figures.js';
import { load, pickGenerator, type Request } from './load.js';
import { buildNestPeer, rotation, startPeer } from './peers.js';
import { cpuSeconds, servingPid, startProcess, stopProcess, waitForAnswer, type Started } from './processes.js';
import { API_KEY, AUTH, restScenarios, SCENARIOS as ALL_SCENARIOS, serviceEnv } from './requests.js';
import { freshPostgresDatabase, seedPets, seedPostgresPets } from './seed.js';
import { runInNetworkNamespace } from './network-namespace.js';

runInNetworkNamespace();

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ROUNDS = Number(process.env.AB_ROUNDS ?? 5);
const SECONDS = Number(process.env.AB_SECONDS ?? 4);
const TURNS = Number(process.env.AB_TURNS ?? 4);
const TRPC_LIST = 'tRPC list limit=20';
const SCENARIOS = [
  ...restScenarios(process.env.AB_ONLY),
  ...ALL_SCENARIOS.filter(({ label }) => label === TRPC_LIST && (!process.env.AB_ONLY || label.includes(process.env.AB_ONLY))),
];

const dirs = process.argv.slice(2);
if (dirs.length === 0) {
  console.error('usage: tsx bench/ab-shipped.ts <dist-dir>… (oldest first; dist/ is added last)');
  process.exit(1);
}
const workDir = mkdtempSync(join(tmpdir(), 'animal-store-ab-'));
const generator = pickGenerator(ROOT, process.env.BENCH_GENERATOR);

const POSTGRES_URL = process.env.AB_POSTGRES_URL;
const NEST = 'NestJS';
/** The services by their folder's name, oldest first, then dist/; then the peer. */
const entries = new Map([...dirs, 'dist'].map((dir) => [basename(resolve(dir)), join(resolve(ROOT, dir), 'start.js')]));
const SYSTEMS = POSTGRES_URL ? [...entries.keys()] : [...entries.keys(), NEST];
/** The systems a scenario loads: the peer serves REST only. */
const systemsOf = (label: string) => (label === TRPC_LIST ? SYSTEMS.filter((system) => system !== NEST) : SYSTEMS);

/** A system's database: a SQLite file, or a fresh PostgreSQL database on AB_POSTGRES_URL's server. */
async function databaseOf(system: string): Promise<string> {
  if (!POSTGRES_URL) return `file:${join(workDir, `${system}.db`)}`;
  return freshPostgresDatabase(POSTGRES_URL, `animal_store_ab_${system}`);
}

const databases = new Map<string, string>();

async function startService(name: string, entry: string, databaseUrl: string): Promise<Started> {
  const port = await freePort();
  const env = serviceEnv({ port, databaseUrl });
  const started = startProcess(name, process.execPath, [entry], { cwd: ROOT, env, port });
  await waitForAnswer(started, '/v1/pets?limit=1', AUTH, performance.now());
  return started;
}

const fileOf = (system: string) => join(workDir, `${system}.db`);
const servers = new Map<string, Started>();

/** Every system started on its database (made and seeded the first time), answering. */
async function startAll(): Promise<void> {
  for (const [name, entry] of entries) {
    const seeded = databases.has(name);
    if (!seeded) databases.set(name, await databaseOf(name));
    servers.set(name, await startService(name, entry, databases.get(name)!));
    if (seeded) continue;
    if (POSTGRES_URL) await seedPostgresPets(databases.get(name)!, 1_000);
    else seedPets(fileOf(name), 1_000);
  }
  if (!POSTGRES_URL) {
    servers.set(NEST, startPeer('NestJS', ROOT, await freePort(), fileOf(NEST), API_KEY));
    await waitForAnswer(servers.get(NEST)!, '/v1/pets?limit=1', AUTH, performance.now());
    if (!databases.has(NEST)) seedPets(fileOf(NEST), 1_000);
    databases.set(NEST, fileOf(NEST));
  }
}

async function stopAll(): Promise<void> {
  await Promise.all([...servers.values()].map((server) => stopProcess(server)));
  servers.clear();
}

try {
  if (!POSTGRES_URL) buildNestPeer(ROOT);
  const measure = async (system: string, request: Request, seconds: number) => {
    const server = servers.get(system)!;
    const pid = servingPid(server);
    const cpuBefore = cpuSeconds(pid);
    const result = await load(generator, ROOT, workDir, server.port, request, { seconds, connections: 32 });
    return { ...result, cpuSeconds: cpuSeconds(pid) - cpuBefore };
  };
  const warmUp = async () => {
    for (const { label, request } of SCENARIOS) for (const system of systemsOf(label)) await measure(system, request, 2);
  };
  type Run = { rps: number; cpu: number };
  const runs = new Map(SCENARIOS.map(({ label }) => [label, new Map<string, Run[]>(systemsOf(label).map((system) => [system, []]))]));
  for (let round = 1; round <= ROUNDS; round++) {
    await stopAll();
    await startAll();
    await warmUp();
    for (const { label, request } of SCENARIOS) {
      // Each system's AB_SECONDS in AB_TURNS turns, the order rotating turn by turn: the systems share the same seconds.
      const sums = new Map(systemsOf(label).map((system) => [system, { requests: 0, seconds: 0, cpuSeconds: 0, errors: 0 }]));
      for (let turn = 0; turn < TURNS; turn++) {
        for (const system of rotation(systemsOf(label), round + turn)) {
          const result = await measure(system, request, Math.max(1, Math.round(SECONDS / TURNS)));
          const sum = sums.get(system)!;
          sum.requests += result.requests;
          sum.seconds += result.requests / Math.max(result.requestsPerSecond, 1e-9);
          sum.cpuSeconds += result.cpuSeconds;
          sum.errors += result.errors;
        }
      }
      for (const [system, sum] of sums) {
        const run = { rps: sum.requests / Math.max(sum.seconds, 1e-9), cpu: (sum.cpuSeconds * 1e6) / Math.max(sum.requests, 1) };
        runs.get(label)!.get(system)!.push(run);
        const errors = sum.errors ? `, ${sum.errors} ERRORS` : '';
        console.log(
          `  round ${round} ${label.padEnd(20)} ${system.padEnd(16)} ${run.rps.toFixed(0)} req/s, CPU ${run.cpu.toFixed(0)} µs/req${errors}`,
        );
      }
    }
  }
  const first = SYSTEMS[0]!;
  console.log(`\n| scenario | system | req/s | CPU µs/req | ÷ ${first} | ÷ ${NEST} |`);
  console.log('|---|---|---|---|---|---|');
  for (const [label, of] of runs) {
    for (const [system, list] of of) {
      const over = (other: string) =>
        of.has(other)
          ? medianCell(
              list.map((run, i) => run.rps / of.get(other)![i]!.rps),
              2,
            )
          : '—';
      console.log(
        `| ${label} | ${system} | ${medianCell(
          list.map((r) => r.rps),
          0,
        )} | ${median(list.map((r) => r.cpu)).toFixed(0)} | ${over(first)} | ${over(NEST)} |`,
      );
    }
  }
} finally {
  await stopAll();
  rmSync(workDir, { recursive: true, force: true });
}
