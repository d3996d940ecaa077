// The "under attack" scenario (bench/run.ts, BENCH_ONLY=attack), run by bench/run.ts inside a
// network namespace whose loopback has an Ethernet's MTU (scripts/in-network-namespace.sh), so
// that the kernel's buffers are what a real path gives. Per database (SQLite, then PostgreSQL: a
// private server started inside the namespace), against `npm start` with the operator's NODE_OPTIONS:
//   1. quiet: the legitimate client alone, from 127.0.0.2: kept-alive requests (4 connections,
//      GET /v1/pets?limit=20 with its key) and, meanwhile, a new connection every 100 ms (the same
//      request, timed from connect() to the answer's last byte);
//   2. the mix, all from 127.0.0.1: 4,000 idle keep-alive connections (each sent GET /healthz, then
//      nothing), 400 keyless slow readers of the docs bundle (a 2 KiB receive window, 8 pipelined
//      GETs each, never reading: test/support/slow-readers.ts) and a keyless 50-call tRPC batch flood
//      (POST, whose 401 closes the connection: wrk, 32 connections; autocannon where wrk is
//      missing); the same client from the attack's start, for ATTACK_SECONDS.
// The kernel's listen-queue drops (TcpExtListenOverflows, ListenDrops: this namespace's alone) and
// the service's peak RSS are counted over each phase. The figures go to the file named by the first
// argument, as JSON (AttackFigures); progress to stdout.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load, pickGenerator, type Request } from './load.js';
import { killAllStarted, PeakRss, servingPid, startProcess, stopProcess, waitForAnswer } from './processes.js';
import { AUTH, serviceEnv } from './requests.js';
import { seedPets, seedPostgresPets } from './seed.js';
import {
  assertInNetworkNamespace,
  keptAliveClient,
  listenDrops,
  percentile,
  probeNewConnections,
  type Timed,
} from '../test/support/floods.js';
import { freePort } from '../test/support/free-port.js';
import { operatorNodeOptions } from '../test/support/operations-doc.js';
import { startPrivatePostgres } from '../test/support/private-postgres.js';
import { holdSlowReaders } from '../test/support/slow-readers.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NODE_OPTIONS = process.env.BENCH_NODE_OPTIONS ?? operatorNodeOptions();
const QUIET_SECONDS = Number(process.env.BENCH_ATTACK_QUIET_SECONDS ?? 10);
const ATTACK_SECONDS = Number(process.env.BENCH_ATTACK_SECONDS ?? 30);
const DIST = process.env.BENCH_ATTACK_DIST;
const DATABASES = (process.env.BENCH_ATTACK_DATABASES ?? 'sqlite,postgresql').split(',');
const MIX = { idle: 4_000, slowReaders: 400, batchConnections: 32, batchCalls: 50 };
const CLIENT = { from: '127.0.0.2', path: '/v1/pets?limit=20', headers: AUTH };
const BUNDLE = '/v1/docs/assets/swagger-ui-bundle.js';
const PROBE_EVERY_MS = 100;
const TIMEOUT_MS = 10_000;

/**
 * The batch flood's request: a keyless POST of MIX.batchCalls creates in one tRPC batch. Its 401
 * comes before the body is read and closes the connection (docs/security.md), so each request
 * is a new connection.
 */
function keylessBatch(): Request {
  const calls = Array.from({ length: MIX.batchCalls }, () => 'pets.create');
  const body = Object.fromEntries(calls.map((_, i) => [i, { name: 'flood', categoryId: 1 }]));
  return {
    method: 'POST',
    path: `/trpc/${calls.join(',')}?batch=1`,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
}

/** The legitimate client's figures for one phase. */
export interface ClientFigures {
  /** Kept-alive requests: every answer's time (ms), and the failures. */
  keptAlive: { times: number[]; errors: number };
  /** New connections, in the order opened: each one's time (ms), or null where it failed. */
  newConnections: Array<number | null>;
  listenOverflows: number;
  listenDrops: number;
  peakRssBytes: number;
}

export interface AttackFigures {
  database: string;
  mix: typeof MIX;
  quiet: ClientFigures;
  attacked: ClientFigures;
  idleHeld: number;
  slowReaders: number;
  batchesPerSecond: number;
  /** The 1-minute load average at the start and the end of the attacked phase. */
  load: [number, number];
}

function summary(answers: Timed[]): { times: number[]; errors: number } {
  const times = answers.flatMap((a) => ('status' in a && a.status === 200 ? [a.ms] : []));
  return { times, errors: answers.length - times.length };
}

/** Both halves of the legitimate client for `seconds`, with the kernel's drops and the peak RSS over them. */
async function client(port: number, rss: PeakRss, seconds: number): Promise<ClientFigures> {
  const before = listenDrops();
  rss.resetPeak();
  const [kept, fresh] = await Promise.all([
    keptAliveClient(port, { ...CLIENT, connections: 4, seconds, timeoutMs: TIMEOUT_MS }),
    probeNewConnections(port, { ...CLIENT, everyMs: PROBE_EVERY_MS, seconds, timeoutMs: TIMEOUT_MS }),
  ]);
  const after = listenDrops();
  return {
    keptAlive: summary(kept),
    newConnections: fresh.map((a) => ('status' in a && a.status === 200 ? a.ms : null)),
    listenOverflows: after.overflows - before.overflows,
    listenDrops: after.drops - before.drops,
    peakRssBytes: rss.readPeak(),
  };
}

async function measure(database: string, workDir: string): Promise<AttackFigures> {
  console.log(`\n## under attack (${database}), in a network namespace, loopback MTU 1500`);
  const postgres = database === 'postgresql' ? await startPrivatePostgres() : undefined;
  const port = await freePort();
  const databaseUrl = postgres ? postgres.url() : `file:${join(workDir, 'attack.db')}`;
  // BENCH_ATTACK_DIST: a copy of dist/ (a before build) started as `node <dir>/start.js` instead.
  const [command, args] = DIST ? [process.execPath, [join(DIST, 'start.js')]] : ['npm', ['start']];
  const started = startProcess(`service-attack-${database}`, command, args, {
    cwd: ROOT,
    // The mix comes from one address, standing for many: admitted, not refused at the door (the
    // default caps under these NODE_OPTIONS: 1,280 connections, 160 per address; src/config.ts).
    env: { ...serviceEnv({ port, databaseUrl, nodeOptions: NODE_OPTIONS }), MAX_CONNECTIONS: '10000', MAX_CONNECTIONS_PER_ADDRESS: '5000' },
    port,
  });
  try {
    await waitForAnswer(started, '/v1/pets?limit=1', AUTH, performance.now(), 60_000);
    if (postgres) await seedPostgresPets(databaseUrl, 1_000);
    else seedPets(databaseUrl.slice('file:'.length), 1_000);
    const rss = new PeakRss(servingPid(started));
    await client(port, rss, 2); // warm-up
    const quiet = await client(port, rss, QUIET_SECONDS);
    console.log(`  quiet     ${describe(quiet)}`);

    const generator = pickGenerator(ROOT, process.env.BENCH_GENERATOR);
    // The attack, all from 127.0.0.1, and the client from its first connection on: the burst's
    // 4,400 connections land in the listen queues ahead of the client's (BENCH_ATTACK_ONSET=0: the
    // client once all of the attack runs).
    const onset = process.env.BENCH_ATTACK_ONSET !== '0';
    let loadBefore = loadavg()[0]!;
    const early = onset ? client(port, rss, ATTACK_SECONDS) : undefined;
    const idle = await holdSlowReaders(port, MIX.idle, 1, '/healthz');
    const readers = await holdSlowReaders(port, MIX.slowReaders, 8, BUNDLE);
    const flood = load(generator, ROOT, workDir, port, keylessBatch(), {
      seconds: ATTACK_SECONDS + (onset ? 0 : 5),
      connections: MIX.batchConnections,
    });
    try {
      if (!onset) {
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        loadBefore = loadavg()[0]!;
      }
      const attacked = await (early ?? client(port, rss, ATTACK_SECONDS));
      if (process.env.BENCH_ATTACK_DEBUG) {
        console.log(
          attacked.newConnections
            .slice(0, 100)
            .map((ms) => (ms === null ? 'x' : ms.toFixed(0)))
            .join(' '),
        );
      }
      const figures: AttackFigures = {
        database,
        mix: MIX,
        quiet,
        attacked,
        idleHeld: idle.connected,
        slowReaders: readers.connected,
        batchesPerSecond: (await flood).requestsPerSecond,
        load: [loadBefore, loadavg()[0]!],
      };
      console.log(`  attacked  ${describe(attacked)}`);
      console.log(
        `  idle held ${figures.idleHeld}, slow readers ${figures.slowReaders}, keyless batches ${figures.batchesPerSecond.toFixed(0)}/s, load ${figures.load.map((l) => l.toFixed(1)).join(' → ')}`,
      );
      return figures;
    } finally {
      readers.stop();
      idle.stop();
      await flood.catch(() => undefined);
    }
  } finally {
    await stopProcess(started);
    await postgres?.destroy();
  }
}

/** p50/p99 of a list of times, in ms. */
function quantiles(times: number[]): string {
  return `p50 ${percentile(times, 50).toFixed(1)} p99 ${percentile(times, 99).toFixed(1)}`;
}

function describe(f: ClientFigures): string {
  const fresh = f.newConnections.filter((ms): ms is number => ms !== null);
  const first = f.newConnections.slice(0, 100).filter((ms) => ms !== null && ms <= 2_000).length;
  const failed = f.newConnections.length - fresh.length;
  return (
    `kept-alive ${quantiles(f.keptAlive.times)} ms (${f.keptAlive.times.length}, ${f.keptAlive.errors} errors); ` +
    `new connections ${quantiles(fresh)} ms (${f.newConnections.length}, ${failed} failed, ${first} of the first 100 within 2 s); ` +
    `listen overflows ${f.listenOverflows}, drops ${f.listenDrops}; peak RSS ${(f.peakRssBytes / 2 ** 20).toFixed(0)} MB`
  );
}

assertInNetworkNamespace();
const out = process.argv[2];
const workDir = mkdtempSync(join(tmpdir(), 'animal-store-attack-'));
process.on('exit', () => {
  killAllStarted();
  rmSync(workDir, { recursive: true, force: true });
});
const results: AttackFigures[] = [];
for (const database of DATABASES) results.push(await measure(database, workDir));
if (out) writeFileSync(out, JSON.stringify(results));
