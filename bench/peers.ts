// The peer comparison of `npm run bench` (alone: BENCH_ONLY=peers): the service against what its
// users would pick instead, in the same run as the bare baseline, on SQLite. The service runs as
// shipped (`npm start`: node dist/start.js, no NODE_OPTIONS) and with the operator's NODE_OPTIONS
// of docs/operations.md; the NestJS peer (bench/peers/nestjs) is compiled with its own tsconfig
// and run with plain `node`, as a Nest app is deployed. Each round loads every system in turn, the
// order rotating from round to round; ratios are per round, then the median.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { startProcess, type Started } from './processes.js';
import { median, spread } from './figures.js';

/** The systems of the comparison, in the order of the table's columns. */
export const PEER_SYSTEMS = ['service as shipped', 'service with NODE_OPTIONS', 'NestJS', 'baseline'] as const;
export type PeerSystem = (typeof PEER_SYSTEMS)[number];

/** The scenarios the peers serve (the REST list, create and get of the contract). */
export const PEER_SCENARIOS = ['REST list limit=20', 'REST create', 'REST get (deprecated)'];

/** The lead over every peer the service aims at (issue target), per scenario. */
export const PEER_TARGET_RATIO = 1.2;

/** `tsc -p bench/peers/nestjs`: the peer as `nest build` would compile it, into dist/bench-peers/nestjs. */
export function buildNestPeer(root: string): void {
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'bench', 'peers', 'nestjs')], {
    cwd: root,
    stdio: 'inherit',
  });
}

/** Starts the compiled NestJS peer on a SQLite file (migrated by the peer itself, as the baseline does). */
export function startNestPeer(root: string, port: number, file: string, apiKeys: string): Started {
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    PEER_PORT: String(port),
    PEER_DB: file,
    PEER_MIGRATIONS: join(root, 'prisma', 'sqlite', 'migrations'),
    API_KEYS: apiKeys,
  };
  const entry = join(root, 'dist', 'bench-peers', 'nestjs', 'bench', 'peers', 'nestjs', 'main.js');
  return startProcess('nestjs', process.execPath, [entry], { cwd: root, env, port });
}

/** Round `round` (from 1) loads the systems in this order: each one first in turn. */
export function rotation<T>(systems: readonly T[], round: number): T[] {
  const shift = (round - 1) % systems.length;
  return [...systems.slice(shift), ...systems.slice(0, shift)];
}

export interface PeerFigures {
  requestsPerSecond: number;
  cpuMicrosPerRequest: number;
}

/** Per round: one system's req/s over another's. */
function ratios(runs: Record<PeerSystem, PeerFigures[]>, mine: PeerSystem, theirs: PeerSystem): number[] {
  return runs[mine].map((run, i) => run.requestsPerSecond / runs[theirs][i]!.requestsPerSecond);
}

/** The peer tables; returns service ÷ NestJS (as shipped, and with NODE_OPTIONS) per scenario. */
export function printPeerComparison(
  runs: Map<string, Record<PeerSystem, PeerFigures[]>>,
  rounds: number,
  nodeOptions: string,
): Map<string, { shipped: number; withOptions: number }> {
  console.log('');
  console.log(
    `peers on SQLite: medians over ${rounds} rounds (min–max), each system loaded in turn, the order rotating; ratios per round; "with NODE_OPTIONS": ${nodeOptions}`,
  );
  console.log('');
  console.log('| service ÷ peer req/s | REST list limit=20 | REST create | REST get (deprecated) |');
  console.log('|---|---|---|---|');
  const result = new Map<string, { shipped: number; withOptions: number }>();
  const cell = (values: number[]) => `**${median(values).toFixed(2)}** (${spread(values, 2)})`;
  const row = (label: string, mine: PeerSystem, theirs: PeerSystem) =>
    console.log(`| ${label} | ${PEER_SCENARIOS.map((scenario) => cell(ratios(runs.get(scenario)!, mine, theirs))).join(' | ')} |`);
  row('NestJS, service as shipped', 'service as shipped', 'NestJS');
  row('NestJS, service with NODE_OPTIONS', 'service with NODE_OPTIONS', 'NestJS');
  row('bare baseline, service as shipped', 'service as shipped', 'baseline');
  row('bare baseline, NestJS', 'NestJS', 'baseline');
  for (const scenario of PEER_SCENARIOS) {
    const of = runs.get(scenario)!;
    result.set(scenario, {
      shipped: median(ratios(of, 'service as shipped', 'NestJS')),
      withOptions: median(ratios(of, 'service with NODE_OPTIONS', 'NestJS')),
    });
  }
  console.log('');
  console.log(
    `| scenario | ${PEER_SYSTEMS.map((system) => `${system} req/s`).join(' | ')} | ${PEER_SYSTEMS.map((system) => `${system} CPU µs/req`).join(' | ')} |`,
  );
  console.log(`|---|${PEER_SYSTEMS.map(() => '---|---|').join('')}`);
  for (const scenario of PEER_SCENARIOS) {
    const of = runs.get(scenario)!;
    const rps = PEER_SYSTEMS.map((system) => {
      const values = of[system].map((run) => run.requestsPerSecond);
      return `${median(values).toFixed(0)} (${spread(values, 0)})`;
    });
    const cpu = PEER_SYSTEMS.map((system) => median(of[system].map((run) => run.cpuMicrosPerRequest)).toFixed(0));
    console.log(`| ${scenario} | ${rps.join(' | ')} | ${cpu.join(' | ')} |`);
  }
  return result;
}
