// `npm run bench`: the service against a bare baseline (bench/baseline-server.ts), in one run on
// one machine, so that the ratios mean something even when other work shares the machine; all of it
// inside a network namespace whose loopback has an Ethernet's MTU (bench/network-namespace.ts). Once on
// SQLite, then once on PostgreSQL (the same server for both, a database each), and on request once
// with the service behind PgBouncer (`pgbouncer`: a private PgBouncer in transaction pooling in
// front of the same server, `?pgbouncer=true`, against the same baseline on PostgreSQL directly).
//
//   1. Both servers start (the service with its real start command, `npm start`, as shipped: production
//      settings, no NODE_OPTIONS), each on its own database (SQLite: a file in a temporary directory; PostgreSQL:
//      a fresh database on the run's server, dropped at the end), seeded with the same rows.
//   2. Every scenario is checked once on both (same status, same body).
//   3. Rounds: both servers start afresh and warm up (instances of one build differ by several
//      percent), then each scenario is loaded on both in BENCH_TURNS turns, the order flipping every
//      turn (the shared machine's speed moves within seconds), with the same generator and settings.
//      Peak RSS is the kernel's VmHWM, reset before each load; CPU time per request is the serving process's utime + stime over the load
//      (/proc/<pid>/stat) divided by the requests it answered. Then the service under the operator's
//      NODE_OPTIONS loads each scenario once on the same database, for the peak-RSS target.
//   4. SQLite only: the list on 1k rows against the list on 1M rows (two more service instances).
//   5. SQLite only: start-up, `npm start` on an up-to-date database until the first 200 answer.
//   6. SQLite only: the peers (bench/peers.ts): the service as shipped and with NODE_OPTIONS
//      against the NestJS, oRPC and Hono peers and the bare baseline, each loaded in turn, on REST list,
//      create, get and the typed-RPC list (oRPC's RPCHandler against the service's /trpc), all of
//      them started afresh each round, loaded in turns as in 3.
//   7. Under attack (bench/under-attack.ts), SQLite and
//      PostgreSQL: a legitimate client's kept-alive and new-connection latencies, the kernel's
//      listen-queue drops and the server's peak RSS during a mixed flood, against the client alone.
//   8. SQLite only: shared limits: the service with REDIS_URL (a private redis-server) against the
//      same service without it, on one database, alternating.
// It prints a table of medians over rounds per database, with min–max spreads, and stops by itself.
//
// Settings (environment of this script only): BENCH_ROUNDS (5: a median that two disturbed rounds
// of the shared machine cannot move), BENCH_SECONDS (5), BENCH_WARM_UP_SECONDS (2: each scenario's
// load before a round's measured loads), BENCH_TURNS (5: each system's BENCH_SECONDS of a scenario in
// that many turns, of a whole second at least),
// BENCH_CONNECTIONS (32), BENCH_GENERATOR (wrk or autocannon; default: wrk when installed),
// BENCH_DATABASES (sqlite,postgresql; also pgbouncer, which needs Debian's pgbouncer), BENCH_POSTGRES_URL
// (a server where this user may CREATE DATABASE, by its Unix socket from inside the namespace, e.g.
// postgresql://postgres@localhost/postgres?host=/var/run/postgresql; default: a private cluster, fsync
// off), BENCH_POOL_SIZE (10: the service's
// DATABASE_POOL_SIZE, the baseline's pool and PgBouncer's server connections), BENCH_JSON (write the raw figures to this file),
// BENCH_QUICK=1 (the service/baseline rounds only: for before/after comparisons of one change),
// BENCH_ONLY=attack (the "under attack" scenario alone), BENCH_ONLY=peers (the peer comparison alone),
// BENCH_ONLY=redis (the shared limits' cost alone), BENCH_ONLY=rows (the list at 1k against 1M rows alone),
// BENCH_NODE_OPTIONS (the NODE_OPTIONS of the RSS runs, 1k/1M rows, start-up, the peers' second service and
// shared limits; default: the operator setting of docs/operations.md,
// "The process's memory settings"; empty: none).
import { execSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpus, loadavg, tmpdir } from 'node:os';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { median, medianCell, ratioCell, spread } from './figures.js';
import { load, pickGenerator, type LoadResult, type Request } from './load.js';
import { freePort } from '../test/support/free-port.js';
import {
  httpCall,
  killAllStarted,
  PeakRss,
  cpuSeconds,
  processTree,
  servingPid,
  startProcess,
  stopProcess,
  waitForAnswer,
  type Started,
} from './processes.js';
import { API_KEY, AUTH, SCENARIOS, serviceEnv, type Scenario } from './requests.js';
import { onPostgresServer, seedPets, seedPostgresPets } from './seed.js';
import {
  asServiceAnswer,
  buildNestPeer,
  PEER_SCENARIOS,
  PEER_SYSTEMS,
  PEERS,
  peerRequest,
  peerTargets,
  printPeerComparison,
  rotation,
  startPeer,
  type PeerFigures,
  type PeerSystem,
} from './peers.js';
import type { AttackFigures, ClientFigures } from './under-attack.js';
import { percentile } from '../test/support/floods.js';
import { operatorNodeOptions } from '../test/support/operations-doc.js';
import { startPrivatePgBouncer, type PrivatePgBouncer } from '../test/support/private-pgbouncer.js';
import { startPrivatePostgres, type PrivatePostgres } from '../test/support/private-postgres.js';
import { startPrivateRedis } from '../test/support/private-redis.js';
import { runInNetworkNamespace } from './network-namespace.js';

runInNetworkNamespace();

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const QUICK = process.env.BENCH_QUICK === '1';
const ONLY_ATTACK = process.env.BENCH_ONLY === 'attack';
const ONLY_PEERS = process.env.BENCH_ONLY === 'peers';
const ONLY_REDIS = process.env.BENCH_ONLY === 'redis';
const ONLY_ROWS = process.env.BENCH_ONLY === 'rows';
const KINDS = ['sqlite', 'postgresql', 'pgbouncer'] as const;
type DatabaseKind = (typeof KINDS)[number];
const DATABASES = (process.env.BENCH_DATABASES ?? 'sqlite,postgresql').split(',').map((name) => {
  if (!(KINDS as readonly string[]).includes(name)) throw new Error(`BENCH_DATABASES: unknown database "${name}"`);
  return name as DatabaseKind;
});
const POOL_SIZE = Number(process.env.BENCH_POOL_SIZE ?? 10);
const NODE_OPTIONS = process.env.BENCH_NODE_OPTIONS ?? operatorNodeOptions();
const WARM_UP_SECONDS = Number(process.env.BENCH_WARM_UP_SECONDS ?? 2);
/** Turns a comparison's load of a scenario is cut into, the systems alternating (BENCH_SECONDS in all per system). */
const TURNS = Math.max(1, Number(process.env.BENCH_TURNS ?? 5));
const SEED_ROWS = 1_000;
const LARGE_ROWS = 1_000_000;
const START_UP_RUNS = 3;
/**
 * Whatever happens, the benchmark ends: everything it started is killed after this. 50 minutes
 * for the default run (about 35), in proportion for longer rounds or a third database.
 */
const HARD_LIMIT_MS = 50 * 60_000 * Math.max(1, (ROUNDS * SECONDS) / 25) * Math.max(1, DATABASES.length / 2);

const workDir = mkdtempSync(join(tmpdir(), 'animal-store-bench-'));
const generator = pickGenerator(ROOT, process.env.BENCH_GENERATOR);
let finished = false;
function cleanUp(): void {
  killAllStarted();
  rmSync(workDir, { recursive: true, force: true });
}
process.on('exit', cleanUp);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    cleanUp();
    process.exit(130);
  });
}
setTimeout(() => {
  if (finished) return;
  console.error(`benchmark exceeded ${HARD_LIMIT_MS / 60_000} minutes: stopping`);
  process.exit(2);
}, HARD_LIMIT_MS).unref();

// ---------------------------------------------------------------------------------------------
// Servers

interface Server {
  name: 'service' | 'baseline' | 'peer';
  started: Started;
  rss: PeakRss;
  /** The SQLite file or PostgreSQL URL it serves. */
  database: string;
}

/** A database for one server: a SQLite file, or a fresh PostgreSQL database (dropped at the end). */
interface BenchDatabase {
  kind: DatabaseKind;
  /** DATABASE_URL for the service. */
  url: string;
  /** DATABASE_DIRECT_URL for the service, when `url` goes through PgBouncer. */
  directUrl?: string;
  /** What the baseline takes as BASELINE_DB: the file, or the URL. */
  target: string;
  seed(rows: number): Promise<number>;
  drop(): Promise<void>;
}

/** The run's PostgreSQL server: BENCH_POSTGRES_URL's, or a private cluster started at the first PostgreSQL database. */
let privatePostgres: Promise<PrivatePostgres> | undefined;
async function postgresServerUrl(): Promise<string> {
  if (process.env.BENCH_POSTGRES_URL) return process.env.BENCH_POSTGRES_URL;
  privatePostgres ??= startPrivatePostgres();
  return (await privatePostgres).url('postgres');
}

/** A statement on the run's PostgreSQL server, saying what to set when it is not there. */
async function onBenchServer(sql: string): Promise<void> {
  try {
    await onPostgresServer(await postgresServerUrl(), sql);
  } catch (error) {
    throw new Error(`${(error as Error).message}; set BENCH_POSTGRES_URL or BENCH_DATABASES=sqlite`);
  }
}

/** The run's PgBouncer (started at the first `pgbouncer` database): as many server connections as the service's pool. */
let pgbouncer: Promise<PrivatePgBouncer> | undefined;

async function benchDatabase(kind: DatabaseKind, name: string): Promise<BenchDatabase> {
  if (kind === 'sqlite') {
    const file = join(workDir, `${name}.db`);
    return { kind, url: `file:${file}`, target: file, seed: async (rows) => seedPets(file, rows), drop: async () => {} };
  }
  const database = `animal_store_bench_${randomBytes(4).toString('hex')}_${name}`;
  await onBenchServer(`CREATE DATABASE "${database}"`);
  const url = new URL(await postgresServerUrl());
  url.pathname = `/${database}`;
  let pooled: string | undefined;
  if (kind === 'pgbouncer') {
    pgbouncer ??= startPrivatePgBouncer(await postgresServerUrl(), { poolSize: POOL_SIZE });
    pooled = `${(await pgbouncer).url(database)}?pgbouncer=true`;
  }
  return {
    kind,
    url: pooled ?? url.href,
    directUrl: pooled ? url.href : undefined,
    target: url.href,
    seed: (rows) => seedPostgresPets(url.href, rows),
    drop: () => onBenchServer(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`),
  };
}

/** `npm start`, the real start command; returns once it answers, with the time that took. */
async function startService(
  name: string,
  databaseUrl: string,
  directUrl?: string,
  nodeOptions = NODE_OPTIONS,
  redisUrl?: string,
): Promise<{ server: Server; startMs: number }> {
  const port = await freePort();
  const since = performance.now();
  const started = startProcess(name, 'npm', ['start'], {
    cwd: ROOT,
    env: serviceEnv({ port, databaseUrl, directUrl, nodeOptions, redisUrl, poolSize: POOL_SIZE }),
    port,
  });
  const startMs = await waitForAnswer(started, '/v1/pets?limit=1', AUTH, since);
  return { server: { name: 'service', started, rss: new PeakRss(servingPid(started)), database: databaseUrl }, startMs };
}

async function startBaseline(target: string): Promise<Server> {
  const port = await freePort();
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    BASELINE_PORT: String(port),
    BASELINE_DB: target,
    BASELINE_POOL_SIZE: String(POOL_SIZE),
    API_KEYS: API_KEY,
  };
  const started = startProcess('baseline', process.execPath, ['--import', 'tsx', join('bench', 'baseline-server.ts')], {
    cwd: ROOT,
    env,
    port,
  });
  await waitForAnswer(started, '/v1/pets?limit=1', AUTH, performance.now());
  return { name: 'baseline', started, rss: new PeakRss(servingPid(started)), database: target };
}

// ---------------------------------------------------------------------------------------------
// Figures

interface Run extends LoadResult {
  peakRssBytes: number;
  /** CPU time (user + system) of the serving process per request answered, in µs. */
  cpuMicrosPerRequest: number;
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
const fixed = (value: number, digits: number) => value.toFixed(digits);

/** Why a server stopped answering, when it did: its exit, and the end of what it wrote to stderr. */
function whyGone({ name, child, stderr }: Started): string {
  const exit = child.exitCode !== null || child.signalCode !== null ? `exited (${child.exitCode ?? child.signalCode})` : 'still running';
  return `${name} ${exit}; its stderr ends:\n${stderr().slice(-2_000)}`;
}

async function measure(server: Server, request: Request, seconds: number): Promise<Run> {
  server.rss.resetPeak();
  const cpuBefore = cpuSeconds(server.rss.pid);
  const result = await load(generator, ROOT, workDir, server.started.port, request, { seconds, connections: CONNECTIONS }).catch(
    (error: unknown) => {
      throw new Error(`${error instanceof Error ? error.message : String(error)}: ${whyGone(server.started)}`, { cause: error });
    },
  );
  const cpu = cpuSeconds(server.rss.pid) - cpuBefore;
  return { ...result, peakRssBytes: server.rss.readPeak(), cpuMicrosPerRequest: (cpu * 1e6) / Math.max(result.requests, 1) };
}

/**
 * Each system's load of one scenario in TURNS turns of SECONDS / TURNS, the order rotating turn by turn (from
 * `first`): this shared machine's speed moves by a fifth from one 4-s load to the next, so systems compared
 * are loaded in the same seconds, not one after the other. Sums of requests and CPU; medians of the turns' latencies.
 */
async function measureInTurns<S>(systems: ReadonlyArray<readonly [S, Server, Request]>, first: number): Promise<Map<S, Run>> {
  const turns = new Map<S, Run[]>(systems.map(([system]) => [system, []]));
  for (let turn = 0; turn < TURNS; turn++) {
    for (const [system, server, request] of rotation(systems, first + turn + 1)) {
      turns.get(system)!.push(await measure(server, request, Math.max(1, Math.round(SECONDS / TURNS))));
    }
  }
  return new Map([...turns].map(([system, runs]) => [system, combineTurns(runs)]));
}

function combineTurns(runs: Run[]): Run {
  const requests = runs.reduce((sum, run) => sum + run.requests, 0);
  const seconds = runs.reduce((sum, run) => sum + run.requests / Math.max(run.requestsPerSecond, 1e-9), 0);
  const cpuMicros = runs.reduce((sum, run) => sum + run.cpuMicrosPerRequest * run.requests, 0);
  return {
    requests,
    requestsPerSecond: requests / Math.max(seconds, 1e-9),
    p50Ms: median(runs.map((run) => run.p50Ms)),
    p99Ms: median(runs.map((run) => run.p99Ms)),
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    peakRssBytes: Math.max(...runs.map((run) => run.peakRssBytes)),
    cpuMicrosPerRequest: cpuMicros / Math.max(requests, 1),
  };
}

function describeRun(run: Run): string {
  return `${fixed(run.requestsPerSecond, 0)} req/s, p50 ${fixed(run.p50Ms, 2)} ms, p99 ${fixed(run.p99Ms, 2)} ms, CPU ${fixed(run.cpuMicrosPerRequest, 0)} µs/req, peak RSS ${mb(run.peakRssBytes)} MB${run.errors ? `, ${run.errors} ERRORS` : ''}`;
}

/**
 * The same request on both servers must give the same answer, or the comparison is void. A peer
 * (`system`) is sent its own request where it speaks another protocol (bench/peers.ts), and its
 * answer is read as the service's protocol would carry it.
 */
async function checkSameAnswers(service: Server, baseline: Server, scenarios = SCENARIOS, system?: PeerSystem): Promise<void> {
  for (const { label, request, creates } of scenarios) {
    const own = system ? peerRequest(system, label, request) : request;
    if (!own) continue;
    const answers = await Promise.all([
      httpCall(service.started.port, own.method, own.path, own.headers, own.body),
      httpCall(baseline.started.port, request.method, request.path, request.headers, request.body),
    ]);
    const [mine, bare] = answers.map((answer, i) => {
      const parsed = JSON.parse(answer.body) as unknown;
      const body = (i === 0 && system ? asServiceAnswer(system, label, parsed) : parsed) as Record<string, unknown>;
      if (creates) {
        // The ids differ (each server has its own table); everything else must not.
        const pet = ((body.result as { data?: object } | undefined)?.data ?? body) as { id?: unknown };
        if (typeof pet.id !== 'number') throw new Error(`${label}: no id in ${answer.body}`);
        pet.id = 0;
      }
      return { status: answer.status, body };
    });
    if (!isDeepStrictEqual(mine, bare)) {
      throw new Error(
        `${label}: ${service.started.name} and the baseline answer differently:\n${JSON.stringify(mine)}\n${JSON.stringify(bare)}`,
      );
    }
    if (mine!.status >= 300) throw new Error(`${label}: answered ${mine!.status}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The run

function machine(): string {
  const model = cpus()[0]?.model ?? 'unknown CPU';
  let nproc = String(cpus().length);
  try {
    nproc = execSync('nproc').toString().trim();
  } catch {
    /* keep os.cpus() */
  }
  return `nproc ${nproc}, ${model}, Node ${process.version}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`;
}

/** The list on 1k rows against the list on 1M rows: two service instances, loaded in turn, started afresh each round. */
async function measureScale(): Promise<Map<string, { small: Run[]; large: Run[] }>> {
  const files = { small: join(workDir, 'rows-1k.db'), large: join(workDir, 'rows-1m.db') };
  const sizes = ['small', 'large'] as const;
  const startBoth = () => Promise.all(sizes.map((size) => startService(`service-${size}`, `file:${files[size]}`)));
  // Started once to migrate both files before they are seeded.
  const first = await startBoth();
  seedPets(files.small, SEED_ROWS);
  const seedMs = seedPets(files.large, LARGE_ROWS);
  console.log(`seeded ${LARGE_ROWS} rows in ${fixed(seedMs, 0)} ms (better-sqlite3, one transaction)`);
  await Promise.all(first.map(({ server }) => stopProcess(server.started)));
  const scaleScenarios = SCENARIOS.filter((s) => s.label.startsWith('REST list'));
  const scale = new Map<string, { small: Run[]; large: Run[] }>(scaleScenarios.map((s) => [s.label, { small: [], large: [] }]));
  for (let round = 1; round <= ROUNDS; round++) {
    // Each round on instances started afresh, as the service/baseline rounds: one instance can run a list
    // much slower than another of the same build, which would otherwise decide every round.
    const started = await startBoth();
    const servers = { small: started[0]!.server, large: started[1]!.server };
    for (const { request } of scaleScenarios) for (const size of sizes) await measure(servers[size], request, WARM_UP_SECONDS);
    for (const { label, request } of scaleScenarios) {
      for (const size of round % 2 ? sizes : [...sizes].reverse()) {
        const run = await measure(servers[size], request, SECONDS);
        scale.get(label)![size].push(run);
        console.log(`  round ${round} ${label.padEnd(26)} ${size === 'small' ? '1k rows' : '1M rows'}  ${describeRun(run)}`);
      }
    }
    await Promise.all([stopProcess(servers.small.started), stopProcess(servers.large.started)]);
  }
  return scale;
}

/** `npm start` on an up-to-date database (what every restart does) until its first 200, nothing else running. */
async function measureStartUp(): Promise<number[]> {
  const file = join(workDir, 'rows-1k.db');
  const startUps: number[] = [];
  for (let i = 0; i < START_UP_RUNS; i++) {
    const { server, startMs } = await startService(`start-up-${i + 1}`, `file:${file}`);
    startUps.push(startMs);
    await stopProcess(server.started);
  }
  return startUps;
}

interface Comparison {
  kind: DatabaseKind;
  runs: Map<string, { service: Run[]; baseline: Run[] }>;
  serviceLoadPeak: number;
  firstStartMs: number;
  tree: string[];
}

/**
 * The RSS target's run: the service under the operator's NODE_OPTIONS on the same database, each
 * scenario warmed up and loaded once; the largest peak (reset before each load) of those loads.
 */
async function peakRssWithNodeOptions(kind: DatabaseKind, database: BenchDatabase): Promise<number> {
  const { server } = await startService(`service-${kind}-node-options`, database.url, database.directUrl, NODE_OPTIONS);
  try {
    const peaks: number[] = [];
    for (const { label, request } of SCENARIOS) {
      await measure(server, request, WARM_UP_SECONDS);
      const run = await measure(server, request, SECONDS);
      peaks.push(run.peakRssBytes);
      console.log(`  ${kind.padEnd(10)} ${label.padEnd(26)} with NODE_OPTIONS ${describeRun(run)}`);
    }
    return Math.max(...peaks);
  } finally {
    await stopProcess(server.started);
  }
}

/** Steps 1–3 on one kind of database: both servers, the same rows, same answers, alternating rounds. */
async function compare(kind: DatabaseKind): Promise<Comparison> {
  console.log(`\n## ${kind}`);
  const serviceDatabase = await benchDatabase(kind, 'service');
  // Behind PgBouncer the service is compared with the same baseline as on PostgreSQL (direct).
  const baselineDatabase = await benchDatabase(kind === 'pgbouncer' ? 'postgresql' : kind, 'baseline');
  try {
    // 1. Both servers, the same rows.
    // As shipped (no NODE_OPTIONS), as the speed targets are stated; the operator's settings after the rounds.
    const startBoth = async () => ({
      ...(await startService(`service-${kind}`, serviceDatabase.url, serviceDatabase.directUrl, '')),
      baseline: await startBaseline(baselineDatabase.target),
    });
    const first = await startBoth();
    let { server: service, baseline } = first;
    const firstStartMs = first.startMs;
    for (const database of [serviceDatabase, baselineDatabase]) await database.seed(SEED_ROWS);
    console.log(
      `servers: service pid ${service.rss.pid} (npm start, first start with migration ${fixed(firstStartMs, 0)} ms), baseline pid ${baseline.rss.pid}; ${SEED_ROWS} rows each`,
    );
    if (!service.rss.resettable) console.log('note: VmHWM cannot be reset here; RSS figures are lifetime peaks');

    // 2. Same answers.
    await checkSameAnswers(service, baseline);

    // 3. Rounds, alternating; each on both servers started afresh and warmed up (JIT, the database's
    // caches, prepared statements): instances of one build differ by several percent.
    const runs = new Map<string, { service: Run[]; baseline: Run[] }>(SCENARIOS.map((s) => [s.label, { service: [], baseline: [] }]));
    for (let round = 1; round <= ROUNDS; round++) {
      if (round > 1) {
        await Promise.all([stopProcess(service.started), stopProcess(baseline.started)]);
        ({ server: service, baseline } = await startBoth());
      }
      for (const { request } of SCENARIOS) {
        for (const server of [service, baseline]) await measure(server, request, WARM_UP_SECONDS);
      }
      for (const { label, request } of SCENARIOS) {
        const both = [
          ['service', service, request],
          ['baseline', baseline, request],
        ] as const;
        for (const [system, run] of await measureInTurns(both, round - 1)) {
          runs.get(label)![system].push(run);
          console.log(`  round ${round} ${kind.padEnd(10)} ${label.padEnd(26)} ${system.padEnd(8)} ${describeRun(run)}`);
        }
      }
    }
    const tree = processTree(service.started.child.pid!).map((pid) => `${pid}: ${mb(new PeakRss(pid).readCurrent())} MB`);
    await Promise.all([stopProcess(service.started), stopProcess(baseline.started)]);
    const serviceLoadPeak = await peakRssWithNodeOptions(kind, serviceDatabase);
    return { kind, runs, serviceLoadPeak, firstStartMs, tree };
  } finally {
    await serviceDatabase.drop();
    await baselineDatabase.drop();
  }
}

/** 6. The peers on SQLite: every system on a database of its own with the same rows, loaded in turn. */
async function comparePeers(): Promise<Map<string, Record<PeerSystem, PeerFigures[]>>> {
  console.log('\n## peers (SQLite)');
  buildNestPeer(ROOT);
  const scenarios = SCENARIOS.filter((s) => PEER_SCENARIOS.includes(s.label));
  const files = Object.fromEntries(PEER_SYSTEMS.map((system, i) => [system, join(workDir, `peer-${i}.db`)])) as Record<PeerSystem, string>;
  /** Every system on its own file; the last is the baseline. */
  const startSystems = async (): Promise<Array<[PeerSystem, Server]>> => {
    const started: Array<[PeerSystem, Server]> = [
      ['service as shipped', (await startService('service-as-shipped', `file:${files['service as shipped']}`, undefined, '')).server],
      [
        'service with NODE_OPTIONS',
        (await startService('service-node-options', `file:${files['service with NODE_OPTIONS']}`, undefined, NODE_OPTIONS)).server,
      ],
    ];
    for (const peer of PEERS) {
      const peerProcess = startPeer(peer, ROOT, await freePort(), files[peer], API_KEY);
      started.push([peer, { name: 'peer', started: peerProcess, rss: new PeakRss(servingPid(peerProcess)), database: files[peer] }]);
      await waitForAnswer(peerProcess, '/v1/pets?limit=1', AUTH, performance.now());
    }
    started.push(['baseline', await startBaseline(files.baseline)]);
    return started;
  };
  let systems = await startSystems();
  try {
    for (const system of PEER_SYSTEMS) seedPets(files[system], SEED_ROWS);
    const baseline = systems.at(-1)![1];
    for (const [system, server] of systems.slice(0, -1)) await checkSameAnswers(server, baseline, scenarios, system);
    /** What a system is loaded with in a scenario, or null where it does not serve it. */
    const requestOf = (system: PeerSystem, { label, request }: Scenario) => peerRequest(system, label, request);
    const warmUp = async () => {
      for (const scenario of scenarios) {
        for (const [system, server] of systems) {
          const request = requestOf(system, scenario);
          if (request) await measure(server, request, WARM_UP_SECONDS);
        }
      }
    };
    const runs = new Map(
      scenarios.map((s) => [
        s.label,
        Object.fromEntries(PEER_SYSTEMS.map((system) => [system, [] as PeerFigures[]])) as Record<PeerSystem, PeerFigures[]>,
      ]),
    );
    // Each round on every system started afresh and warmed up: instances of one build differ by several percent.
    for (let round = 1; round <= ROUNDS; round++) {
      if (round > 1) {
        await Promise.all(systems.map(([, server]) => stopProcess(server.started)));
        systems = await startSystems();
      }
      await warmUp();
      for (const scenario of scenarios) {
        const serving = systems.flatMap(([system, server]) => {
          const request = requestOf(system, scenario);
          return request ? [[system, server, request] as const] : [];
        });
        for (const [system, run] of await measureInTurns(serving, round - 1)) {
          runs.get(scenario.label)![system].push(run);
          console.log(`  round ${round} ${scenario.label.padEnd(26)} ${system.padEnd(25)} ${describeRun(run)}`);
        }
      }
    }
    return runs;
  } finally {
    await Promise.all(systems.map(([, server]) => stopProcess(server.started)));
  }
}

/**
 * 7. Under attack (bench/under-attack.ts), on SQLite and PostgreSQL, run inside a network namespace
 * whose loopback has an Ethernet's MTU (scripts/in-network-namespace.sh): its figures come back as JSON.
 */
async function measureUnderAttack(): Promise<AttackFigures[]> {
  const out = join(workDir, 'attack.json');
  const child = spawn(
    'bash',
    [join('scripts', 'in-network-namespace.sh'), process.execPath, '--import', 'tsx', join('bench', 'under-attack.ts'), out],
    {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`bench/under-attack.ts in a network namespace exited with ${code}`);
  return JSON.parse(readFileSync(out, 'utf8')) as AttackFigures[];
}

function printUnderAttack(results: AttackFigures[]): void {
  const ms = (value: number) => (value >= 100 ? fixed(value, 0) : fixed(value, 1));
  const row = (database: string, label: string, f: ClientFigures) => {
    const fresh = f.newConnections.filter((t): t is number => t !== null);
    const first = `${f.newConnections.slice(0, 100).filter((t) => t !== null && t <= 2_000).length} of ${Math.min(100, f.newConnections.length)}`;
    const errors = f.keptAlive.errors + f.newConnections.length - fresh.length;
    return `| ${database} | ${label} | ${ms(percentile(f.keptAlive.times, 50))} / ${ms(percentile(f.keptAlive.times, 99))} | ${ms(percentile(fresh, 50))} / ${ms(percentile(fresh, 99))} | ${first} | ${f.listenOverflows} | ${errors} | ${mb(f.peakRssBytes)} |`;
  };
  console.log('');
  const [one] = results;
  if (one) {
    console.log(
      `attack from 127.0.0.1: ${one.mix.idle} idle connections (${one.idleHeld} connected), ${one.slowReaders} keyless slow readers of the docs bundle, keyless ${one.mix.batchCalls}-call tRPC batches (POST, ${one.mix.batchConnections} connections, ${results.map((r) => fixed(r.batchesPerSecond, 0)).join(' / ')} answered/s); client from 127.0.0.2; load average ${results.map((r) => r.load.map((l) => fixed(l, 1)).join('→')).join(', ')}`,
    );
  }
  console.log(
    '| database | legitimate client | kept-alive p50 / p99 ms | new connections p50 / p99 ms | first 100 within 2 s | listen overflows | errors | peak RSS MB |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(row(r.database, 'quiet', r.quiet));
    console.log(row(r.database, 'under attack', r.attacked));
  }
}

/** The scenarios of the shared limits' cost: the same requests with REDIS_URL and without. */
const REDIS_SCENARIOS = SCENARIOS.filter((s) => s.label === 'REST list limit=20' || s.label === 'tRPC list limit=20');

/** 7. The shared limits' cost, on SQLite: two services on one database, one with REDIS_URL (a private redis-server), loaded in turn. */
async function measureRedisCost(): Promise<Map<string, { redis: Run[]; alone: Run[] }>> {
  console.log('\n## shared limits (SQLite): REDIS_URL set against unset');
  const database = await benchDatabase('sqlite', 'redis');
  const redis = await startPrivateRedis();
  const costs = new Map<string, { redis: Run[]; alone: Run[] }>(REDIS_SCENARIOS.map((s) => [s.label, { redis: [], alone: [] }]));
  try {
    const { server: shared } = await startService('service-redis', database.url, undefined, NODE_OPTIONS, redis.url);
    const { server: alone } = await startService('service-no-redis', database.url);
    await database.seed(SEED_ROWS);
    try {
      for (const { request } of REDIS_SCENARIOS) for (const server of [shared, alone]) await measure(server, request, WARM_UP_SECONDS);
      for (let round = 1; round <= ROUNDS; round++) {
        for (const { label, request } of REDIS_SCENARIOS) {
          const order =
            round % 2
              ? ([
                  ['redis', shared],
                  ['alone', alone],
                ] as const)
              : ([
                  ['alone', alone],
                  ['redis', shared],
                ] as const);
          for (const [which, server] of order) {
            const run = await measure(server, request, SECONDS);
            costs.get(label)![which].push(run);
            console.log(`  round ${round} ${label.padEnd(26)} ${which === 'redis' ? 'REDIS_URL' : 'no Redis '}  ${describeRun(run)}`);
          }
        }
      }
    } finally {
      await Promise.all([stopProcess(shared.started), stopProcess(alone.started)]);
    }
  } finally {
    await redis.stop();
    await database.drop();
  }
  return costs;
}

/** The table of the shared limits' cost; returns each scenario's ratio (with ÷ without, per round, median). */
function printRedisCost(costs: Map<string, { redis: Run[]; alone: Run[] }>): Map<string, number> {
  console.log('');
  console.log('| shared limits, SQLite | REDIS_URL req/s | no Redis req/s | ratio | REDIS_URL CPU µs/req | no Redis CPU µs/req |');
  console.log('|---|---|---|---|---|---|');
  const ratios = new Map<string, number>();
  for (const [label, { redis, alone }] of costs) {
    const perRound = redis.map((run, i) => run.requestsPerSecond / alone[i]!.requestsPerSecond);
    ratios.set(label, median(perRound));
    const rps = (list: Run[]) =>
      medianCell(
        list.map((r) => r.requestsPerSecond),
        0,
      );
    const cpu = (list: Run[]) => fixed(median(list.map((r) => r.cpuMicrosPerRequest)), 0);
    console.log(`| ${label} | ${rps(redis)} | ${rps(alone)} | ${ratioCell(perRound)} | ${cpu(redis)} | ${cpu(alone)} |`);
  }
  return ratios;
}

/** The medians table of one comparison; returns the ratio of each scenario. */
function printComparison({ kind, runs }: Comparison): Map<string, number> {
  console.log('');
  console.log(
    `${kind}: medians over ${ROUNDS} rounds (min–max in brackets); ratio = service / baseline req/s, per round, alternating; CPU = serving process's user + system time per request.`,
  );
  console.log('');
  console.log(
    '| scenario | service req/s | baseline req/s | ratio | service CPU µs/req | baseline CPU µs/req | service p50 / p99 ms | baseline p50 / p99 ms | service peak RSS MB | baseline peak RSS MB |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  const ratios = new Map<string, number>();
  for (const { label } of SCENARIOS) {
    const { service: mine, baseline: bare } = runs.get(label)!;
    const rps = (list: Run[]) => list.map((run) => run.requestsPerSecond);
    const cpu = (list: Run[]) =>
      medianCell(
        list.map((run) => run.cpuMicrosPerRequest),
        0,
      );
    const perRound = mine.map((run, i) => run.requestsPerSecond / bare[i]!.requestsPerSecond);
    ratios.set(label, median(perRound));
    const latency = (list: Run[]) => `${fixed(median(list.map((r) => r.p50Ms)), 2)} / ${fixed(median(list.map((r) => r.p99Ms)), 2)}`;
    console.log(
      `| ${label} | ${medianCell(rps(mine), 0)} | ${medianCell(rps(bare), 0)} ` +
        `| ${ratioCell(perRound)} | ${cpu(mine)} | ${cpu(bare)} | ${latency(mine)} | ${latency(bare)} ` +
        `| ${mb(Math.max(...mine.map((r) => r.peakRssBytes)))} | ${mb(Math.max(...bare.map((r) => r.peakRssBytes)))} |`,
    );
  }
  return ratios;
}

/** The scenarios that must reach half the baseline's throughput on every database. */
const HALF_BASELINE = ['REST list limit=20', 'REST list status=pending', 'REST create', 'REST get (deprecated)', 'tRPC list limit=20'];

/** The load average after the run (beside the one before it, in the header): how busy the machine was. */
function printMachineAtEnd(began: number): void {
  console.log(
    `machine at the end: load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; took ${fixed((performance.now() - began) / 1000, 0)} s`,
  );
}

/** The targets, one line each, met or not. */
function printTargets(targets: Array<[string, boolean]>): void {
  for (const [text, met] of targets) console.log(`${met ? 'met    ' : 'NOT met'}  ${text}`);
}

/** A list's p50 at 1M rows at most 1.25 × at 1k. */
function rowsTarget(growth: Map<string, number>): [string, boolean] {
  const list = growth.get('REST list limit=20')!;
  return [`list p50 at 1M rows ≤ 1.25 × at 1k: ${fixed(list, 2)}`, list <= 1.25];
}

/** The 1k/1M rows table; each list's 1M ÷ 1k p50, the median of the rounds'. */
function printScale(scale: Map<string, { small: Run[]; large: Run[] }>): Map<string, number> {
  const growth = new Map<string, number>();
  if (scale.size > 0) {
    console.log('');
    console.log('| list, service on SQLite | p50 ms at 1k rows | p50 ms at 1M rows | 1M / 1k p50 | req/s at 1k | req/s at 1M |');
    console.log('|---|---|---|---|---|---|');
  }
  for (const [label, { small: s, large: l }] of scale) {
    const perRound = l.map((run, i) => run.p50Ms / s[i]!.p50Ms);
    growth.set(label, median(perRound));
    const p50 = (list: Run[]) =>
      medianCell(
        list.map((r) => r.p50Ms),
        2,
      );
    const rps = (list: Run[]) => fixed(median(list.map((r) => r.requestsPerSecond)), 0);
    console.log(`| ${label} | ${p50(s)} | ${p50(l)} | ${ratioCell(perRound)} | ${rps(s)} | ${rps(l)} |`);
  }
  return growth;
}

async function main(): Promise<void> {
  const began = performance.now();
  console.log(`# Animal Store benchmark: service vs bare baseline (${new Date().toISOString()})`);
  console.log(`machine: ${machine()}; the operator's NODE_OPTIONS (RSS runs): ${NODE_OPTIONS || '(none)'}`);
  console.log(
    `load: ${generator}, ${CONNECTIONS} connections, ${SECONDS} s per run in ${TURNS} turns, ${ROUNDS} rounds, alternating; loopback only; databases: ${DATABASES.join(', ')}`,
  );

  if (ONLY_ATTACK) {
    printUnderAttack(await measureUnderAttack());
    return;
  }
  if (ONLY_PEERS) {
    const peers = await comparePeers();
    printPeerComparison(peers, ROUNDS, NODE_OPTIONS);
    console.log('');
    printTargets(peerTargets(peers));
    printMachineAtEnd(began);
    return;
  }
  if (ONLY_REDIS) {
    printRedisCost(await measureRedisCost());
    return;
  }
  if (ONLY_ROWS) {
    const growth = printScale(await measureScale());
    console.log('');
    printTargets([rowsTarget(growth)]);
    printMachineAtEnd(began);
    return;
  }

  // Each database's table as soon as it is measured, so that one database's failure keeps the other's figures.
  const comparisons: Comparison[] = [];
  const ratiosOf = new Map<Comparison, Map<string, number>>();
  for (const kind of DATABASES) {
    const comparison = await compare(kind);
    comparisons.push(comparison);
    ratiosOf.set(comparison, printComparison(comparison));
  }

  // 4 and 5: rows and start-up, on SQLite (skipped by BENCH_QUICK).
  const withSqlite = DATABASES.includes('sqlite') && !QUICK;
  const scale = withSqlite ? await measureScale() : new Map<string, { small: Run[]; large: Run[] }>();
  const startUps = withSqlite ? await measureStartUp() : [];
  const peers = withSqlite ? await comparePeers() : null;
  const underAttack = withSqlite ? await measureUnderAttack() : null;
  const redisCost = withSqlite ? await measureRedisCost() : null;

  // The tables.
  const targets: Array<[string, boolean]> = [];
  for (const comparison of comparisons) {
    const ratios = ratiosOf.get(comparison)!;
    const { kind } = comparison;
    for (const label of HALF_BASELINE)
      targets.push([`${kind}: ${label} ≥ 0.5 × baseline: ${fixed(ratios.get(label)!, 2)}`, ratios.get(label)! >= 0.5]);
    const restList = ratios.get('REST list limit=20')!;
    const trpcList = ratios.get('tRPC list limit=20')!;
    targets.push([`${kind}: tRPC list ≥ 0.8 × baseline: ${fixed(trpcList, 2)}`, trpcList >= 0.8]);
    targets.push([`${kind}: tRPC list ≥ REST list: ${fixed(trpcList, 2)} vs ${fixed(restList, 2)}`, trpcList >= restList]);
    targets.push([
      `${kind}: RSS under load with NODE_OPTIONS ≤ 192 MB: ${mb(comparison.serviceLoadPeak)} MB`,
      comparison.serviceLoadPeak <= 192 * 1024 * 1024,
    ]);
    console.log('');
    console.log(
      `${kind}: service peak RSS under load with NODE_OPTIONS (largest of its runs): ${mb(comparison.serviceLoadPeak)} MB (serving process); npm start's process tree (as shipped) at the end: ${comparison.tree.join(', ')}`,
    );
  }

  const growth = printScale(scale);
  if (startUps.length > 0) {
    const first = comparisons.find((c) => c.kind === 'sqlite')!.firstStartMs;
    console.log('');
    console.log(
      `start-up on SQLite, npm start → first 200 (up-to-date database): median ${fixed(median(startUps), 0)} ms (${spread(startUps, 0)}); first start with migration: ${fixed(first, 0)} ms`,
    );
    targets.push(rowsTarget(growth));
    targets.push([`start-up to first answer ≤ 1.5 s: ${fixed(median(startUps), 0)} ms`, median(startUps) <= 1500]);
  }

  if (peers) {
    printPeerComparison(peers, ROUNDS, NODE_OPTIONS);
    targets.push(...peerTargets(peers));
  }
  if (underAttack) printUnderAttack(underAttack);
  if (redisCost) {
    const restList = printRedisCost(redisCost).get('REST list limit=20')!;
    targets.push([`sqlite: REST list with REDIS_URL ≥ 0.9 × without: ${fixed(restList, 2)}`, restList >= 0.9]);
  }

  console.log('');
  printTargets(targets);
  const errors = comparisons
    .flatMap((c) => [...c.runs.values()])
    .flatMap((r) => [...r.service, ...r.baseline])
    .reduce((sum, run) => sum + run.errors, 0);
  if (errors) console.log(`WARNING: ${errors} failed requests during the load runs`);
  printMachineAtEnd(began);

  if (process.env.BENCH_JSON) {
    const raw = comparisons.map(({ kind, runs, serviceLoadPeak, firstStartMs }) => ({
      kind,
      runs: Object.fromEntries(runs),
      serviceLoadPeak,
      firstStartMs,
    }));
    writeFileSync(process.env.BENCH_JSON, JSON.stringify({ comparisons: raw, scale: Object.fromEntries(scale), startUps }, null, 2));
  }
}

try {
  await main();
  finished = true;
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await (await pgbouncer?.catch(() => undefined))?.stop();
  await (await privatePostgres?.catch(() => undefined))?.destroy();
}
