// `npx tsx bench/instructions.ts [<dist-dir>…]`: instructions a request, counted by valgrind's callgrind, for
// the service as shipped (and each dist/ copy given, for a before/after), the NestJS peer and the bare baseline,
// on SQLite with 1,000 rows. The count does not depend on the host's speed, which moves `npm run bench`'s req/s
// ratios between hosts; it still moves between runs with V8's compilation and collection timing (the spread:
// docs/benchmarks.md). Each system runs under `valgrind --tool=callgrind` with
// instrumentation off while it starts and warms up, then per scenario: on, a settling load, two idle seconds in
// four windows (the quietest one's rate is the timers' work, which valgrind's slowness would otherwise charge to
// the requests), then INSTRUCTIONS_REQUESTS requests on 8 kept-alive connections; a request's count is the
// load's less that rate's share, over the requests. All threads are counted (V8's helpers too). Needs Debian's
// valgrind; build first (`npm run build`); about 25 minutes. INSTRUCTIONS_REQUESTS (6000), INSTRUCTIONS_ONLY
// (scenario labels containing it), INSTRUCTIONS_PEERS (0: the services alone, for a before/after).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/support/free-port.js';
import type { Request } from './load.js';
import { buildNestPeer, peerRequest } from './peers.js';
import { startProcess, stopProcess, waitForAnswer, type Started } from './processes.js';
import { API_KEY, AUTH, SCENARIOS as ALL_SCENARIOS, serviceEnv } from './requests.js';
import { seedPets } from './seed.js';
import { runInNetworkNamespace } from './network-namespace.js';

runInNetworkNamespace();

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REQUESTS = Number(process.env.INSTRUCTIONS_REQUESTS ?? 6000);
const WARM_UP_REQUESTS = 3000;
const SETTLE_REQUESTS = 300;
const IDLE_SECONDS = 2;
const IDLE_WINDOWS = 4;
const CONNECTIONS = 8;
const ONLY = process.env.INSTRUCTIONS_ONLY;
const SCENARIOS = ALL_SCENARIOS.filter(
  ({ label }) =>
    ['REST list limit=20', 'REST create', 'REST get (deprecated)', 'tRPC list limit=20'].includes(label) && (!ONLY || label.includes(ONLY)),
);
const workDir = mkdtempSync(join(tmpdir(), 'animal-store-instructions-'));

try {
  execFileSync('valgrind', ['--version']);
} catch {
  throw new Error('bench/instructions.ts needs valgrind (Debian: apt-get install valgrind)');
}

const NEST = 'NestJS';
const BASELINE = 'baseline';
/** The service as shipped (dist/), after the copies given (oldest first), then the peer and the floor. */
const services = new Map([...process.argv.slice(2), 'dist'].map((dir) => [basename(resolve(dir)), join(resolve(ROOT, dir), 'start.js')]));
const SYSTEMS = process.env.INSTRUCTIONS_PEERS === '0' ? [...services.keys()] : [...services.keys(), NEST, BASELINE];

/** The environment and command of a system on a SQLite file. */
function commandOf(system: string, port: number, file: string): { env: NodeJS.ProcessEnv; args: string[] } {
  const common = { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production', API_KEYS: API_KEY };
  const entry = services.get(system);
  if (entry) return { env: serviceEnv({ port, databaseUrl: `file:${file}` }), args: [entry] };
  if (system === NEST) {
    return {
      env: { ...common, PEER_PORT: String(port), PEER_DB: file, PEER_MIGRATIONS: join(ROOT, 'prisma', 'sqlite', 'migrations') },
      args: [join(ROOT, 'dist', 'bench-peers', 'nestjs', 'bench', 'peers', 'nestjs', 'main.js')],
    };
  }
  return { env: { ...common, BASELINE_PORT: String(port), BASELINE_DB: file }, args: ['--import', 'tsx', 'bench/baseline-server.ts'] };
}

/** `count` requests, `CONNECTIONS` at a time on kept-alive connections; any answer but 2xx fails the run. */
async function send(port: number, { method, path, headers, body }: Request, count: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  let left = count;
  const one = () =>
    new Promise<void>((done, fail) => {
      const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
        if ((res.statusCode ?? 0) >= 300) fail(new Error(`${method} ${path}: ${res.statusCode}`));
        res.resume().on('end', done);
      });
      req.on('error', fail).end(body);
    });
  try {
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (left-- > 0) await one();
      }),
    );
  } finally {
    agent.destroy();
  }
}

/** Runs callgrind_control on the process; vgdb names its pipes after the user and host in the environment, as the child's. */
function control(pid: number, env: NodeJS.ProcessEnv, ...args: string[]): void {
  const names = { USER: env.USER, LOGNAME: env.LOGNAME, HOST: env.HOST, HOSTNAME: env.HOSTNAME };
  const vgdbEnv: NodeJS.ProcessEnv = { PATH: process.env.PATH };
  for (const [name, value] of Object.entries(names)) if (value !== undefined) vgdbEnv[name] = value;
  execFileSync('callgrind_control', [...args, String(pid)], { env: vgdbEnv, stdio: 'ignore' });
}

/** The instruction total of a dump (its `summary:` or `totals:` line). */
function instructionsIn(file: string): number {
  const line = /^(?:summary|totals): (\d+)/m.exec(readFileSync(file, 'utf8'));
  if (!line) throw new Error(`${file}: no instruction total`);
  return Number(line[1]);
}

/** Instructions a request for each scenario the system serves. */
async function measure(system: string): Promise<Map<string, number>> {
  const port = await freePort();
  const file = join(workDir, `${system}.db`);
  const out = join(workDir, `${system}.callgrind`);
  const { env, args } = commandOf(system, port, file);
  const started: Started = startProcess(
    system,
    'valgrind',
    ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${out}`, process.execPath, ...args],
    { cwd: ROOT, env, port },
  );
  const perRequest = new Map<string, number>();
  try {
    await waitForAnswer(started, '/v1/pets?limit=1', AUTH, performance.now(), 180_000, 200);
    seedPets(file, 1_000);
    const pid = started.child.pid!;
    let dumps = 0;
    const dump = () => {
      control(pid, env, '--dump');
      return instructionsIn(`${out}.${++dumps}`);
    };
    for (const { label, request: ours } of SCENARIOS) {
      const request = system === NEST ? peerRequest('NestJS', label, ours) : ours;
      if (request === null) continue;
      await send(port, request, WARM_UP_REQUESTS);
      control(pid, env, '--instr=on');
      await send(port, request, SETTLE_REQUESTS);
      // The quietest of a few idle windows: V8 may collect garbage once the load stops, which is not the timers' work.
      let idlePerSecond = Infinity;
      for (let window = 0; window < IDLE_WINDOWS; window++) {
        control(pid, env, '--zero');
        await new Promise((done) => setTimeout(done, (IDLE_SECONDS * 1000) / IDLE_WINDOWS));
        idlePerSecond = Math.min(idlePerSecond, dump() / (IDLE_SECONDS / IDLE_WINDOWS));
      }
      control(pid, env, '--zero');
      const since = performance.now();
      await send(port, request, REQUESTS);
      const seconds = (performance.now() - since) / 1000;
      const total = dump();
      control(pid, env, '--instr=off');
      perRequest.set(label, (total - idlePerSecond * seconds) / REQUESTS);
      console.log(
        `  ${system.padEnd(12)} ${label.padEnd(24)} ${(total / REQUESTS / 1000).toFixed(0)} k, idle ${(idlePerSecond / 1e6).toFixed(1)} M/s over ${seconds.toFixed(1)} s`,
      );
    }
  } finally {
    await stopProcess(started);
  }
  return perRequest;
}

try {
  buildNestPeer(ROOT);
  console.log(`# Instructions a request (callgrind), ${REQUESTS} requests a scenario, ${CONNECTIONS} connections, SQLite, 1,000 rows`);
  const figures = new Map<string, Map<string, number>>();
  for (const system of SYSTEMS) figures.set(system, await measure(system));
  const service = figures.get('dist')!;
  const heading = SYSTEMS.map((system) => (system === 'dist' ? 'service' : system)).join(' | ');
  console.log(`\n| thousand instructions a request | ${heading} | service ÷ ${NEST} | service ÷ ${BASELINE} |`);
  console.log(`|---|${SYSTEMS.map(() => '---|').join('')}---|---|`);
  for (const { label } of SCENARIOS) {
    const cells = SYSTEMS.map((system) => figures.get(system)!.get(label));
    const ratio = (other: string) => {
      const theirs = figures.get(other)?.get(label);
      return theirs === undefined ? '–' : (service.get(label)! / theirs).toFixed(2);
    };
    console.log(
      `| ${label} | ${cells.map((cell) => (cell === undefined ? '–' : (cell / 1000).toFixed(0))).join(' | ')} | ${ratio(NEST)} | ${ratio(BASELINE)} |`,
    );
  }
} finally {
  rmSync(workDir, { recursive: true, force: true });
}
