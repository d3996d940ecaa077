// The peer comparison of `npm run bench` (alone: BENCH_ONLY=peers): the service against what its
// users would pick instead, in the same run as the bare baseline, on SQLite. The service runs as
// shipped (`npm start`: node dist/start.js, no NODE_OPTIONS) and with the operator's NODE_OPTIONS
// of docs/operations.md. The peers: NestJS on Fastify (bench/peers/nestjs, compiled with its own
// tsconfig and run with plain `node`, as a Nest app is deployed), oRPC on node:http
// (bench/peers/orpc) and Hono with @hono/zod-openapi on @hono/node-server (bench/peers/hono), the
// last two run through tsx as the baseline is. Each round loads every system in turn, the order
// rotating from round to round; ratios are per round, then the median.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { startProcess, type Started } from './processes.js';
import { median, medianCell, ratioCell } from './figures.js';
import type { Request } from './load.js';

/** The frameworks the service is measured against. */
export const PEERS = ['NestJS', 'oRPC', 'Hono'] as const;
export type Peer = (typeof PEERS)[number];

/** The systems of the comparison, in the order of the table's columns. */
export const PEER_SYSTEMS = ['service as shipped', 'service with NODE_OPTIONS', ...PEERS, 'baseline'] as const;
export type PeerSystem = (typeof PEER_SYSTEMS)[number];

/** The scenarios the peers serve: the REST list, create and get of the contract, and the typed-RPC list. */
export const PEER_SCENARIOS = ['REST list limit=20', 'REST create', 'REST get (deprecated)', 'tRPC list limit=20'];

/** The lead over every peer the service aims at (issue target), per scenario, as shipped. */
const PEER_TARGET_RATIO = 1.25;
/** The service as shipped spends at most this share of the CPU a request that the peer closest to it spends. */
const PEER_CPU_TARGET_SHARE = 0.8;

/**
 * The request a system is loaded with in a scenario: the service's own, except where a peer speaks
 * another protocol. oRPC's RPC list is its RPCHandler's GET (what RPCLink sends for a list, per
 * oRPC's docs), beside the service's `/trpc` list; NestJS has no typed-RPC surface, and Hono's
 * typed client calls the REST routes (null: not loaded).
 */
export function peerRequest(system: PeerSystem, scenario: string, request: Request): Request | null {
  if (scenario !== 'tRPC list limit=20') return request;
  if (system === 'NestJS' || system === 'Hono') return null;
  if (system !== 'oRPC') return request;
  const input = new URL(request.path, 'http://peer').searchParams.get('input')!;
  return { ...request, path: `/rpc/pets/list?data=${encodeURIComponent(JSON.stringify({ json: JSON.parse(input) }))}` };
}

/**
 * A peer's answer as the service's protocol would carry it, for the check against the baseline's
 * before the rounds: the body itself where the peer speaks that protocol (it must match), and the
 * `json` of oRPC's RPC protocol in tRPC's `{ result: { data } }` (the same pets as the baseline's).
 */
export function asServiceAnswer(system: PeerSystem, scenario: string, body: unknown): unknown {
  if (system === 'oRPC' && scenario === 'tRPC list limit=20') return { result: { data: (body as { json?: unknown }).json } };
  return body;
}

/** `tsc -p bench/peers/nestjs`: the peer as `nest build` would compile it, into dist/bench-peers/nestjs. */
export function buildNestPeer(root: string): void {
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'bench', 'peers', 'nestjs')], {
    cwd: root,
    stdio: 'inherit',
  });
}

/** Starts a peer on a SQLite file (migrated by the peer itself, as the baseline does). */
export function startPeer(peer: Peer, root: string, port: number, file: string, apiKeys: string): Started {
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    PEER_PORT: String(port),
    PEER_DB: file,
    PEER_MIGRATIONS: join(root, 'prisma', 'sqlite', 'migrations'),
    API_KEYS: apiKeys,
  };
  const args =
    peer === 'NestJS'
      ? [join(root, 'dist', 'bench-peers', 'nestjs', 'bench', 'peers', 'nestjs', 'main.js')]
      : ['--import', 'tsx', join(root, 'bench', 'peers', peer.toLowerCase(), 'main.ts')];
  return startProcess(peer.toLowerCase(), process.execPath, args, { cwd: root, env, port });
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

/** Per round: one system's req/s over another's (none when either does not serve the scenario). */
function ratios(runs: Record<PeerSystem, PeerFigures[]>, mine: PeerSystem, theirs: PeerSystem): number[] {
  if (runs[mine].length === 0 || runs[theirs].length === 0) return [];
  return runs[mine].map((run, i) => run.requestsPerSecond / runs[theirs][i]!.requestsPerSecond);
}

/** The peer tables. */
export function printPeerComparison(runs: Map<string, Record<PeerSystem, PeerFigures[]>>, rounds: number, nodeOptions: string): void {
  console.log('');
  console.log(
    `peers on SQLite: medians over ${rounds} rounds (min–max), each system loaded in turn, the order rotating; ratios per round; "with NODE_OPTIONS": ${nodeOptions}; oRPC's "tRPC list" is its RPCHandler's list`,
  );
  console.log('');
  console.log(`| service ÷ peer req/s | ${PEER_SCENARIOS.join(' | ')} |`);
  console.log(`|---|${PEER_SCENARIOS.map(() => '---|').join('')}`);
  const cell = (values: number[]) => (values.length ? ratioCell(values) : '–');
  const row = (label: string, mine: PeerSystem, theirs: PeerSystem) =>
    console.log(`| ${label} | ${PEER_SCENARIOS.map((scenario) => cell(ratios(runs.get(scenario)!, mine, theirs))).join(' | ')} |`);
  for (const peer of PEERS) {
    row(`${peer}, service as shipped`, 'service as shipped', peer);
    row(`${peer}, service with NODE_OPTIONS`, 'service with NODE_OPTIONS', peer);
  }
  row('bare baseline, service as shipped', 'service as shipped', 'baseline');
  for (const peer of PEERS) row(`bare baseline, ${peer}`, peer, 'baseline');
  console.log('');
  console.log(
    `| scenario | ${PEER_SYSTEMS.map((system) => `${system} req/s`).join(' | ')} | ${PEER_SYSTEMS.map((system) => `${system} CPU µs/req`).join(' | ')} |`,
  );
  console.log(`|---|${PEER_SYSTEMS.map(() => '---|---|').join('')}`);
  for (const scenario of PEER_SCENARIOS) {
    const of = runs.get(scenario)!;
    const rps = PEER_SYSTEMS.map((system) => {
      const values = of[system].map((run) => run.requestsPerSecond);
      return values.length ? medianCell(values, 0) : '–';
    });
    const cpu = PEER_SYSTEMS.map((system) =>
      of[system].length ? median(of[system].map((run) => run.cpuMicrosPerRequest)).toFixed(0) : '–',
    );
    console.log(`| ${scenario} | ${rps.join(' | ')} | ${cpu.join(' | ')} |`);
  }
}

/**
 * The targets, two lines per scenario: the service as shipped at least PEER_TARGET_RATIO × the req/s of
 * every peer that serves the scenario, and at most PEER_CPU_TARGET_SHARE × the CPU a request of the
 * peer that spends least (the closest peer decides each).
 */
export function peerTargets(runs: Map<string, Record<PeerSystem, PeerFigures[]>>): Array<[string, boolean]> {
  const cpuOf = (figures: PeerFigures[]) => median(figures.map((run) => run.cpuMicrosPerRequest));
  return PEER_SCENARIOS.flatMap((scenario): Array<[string, boolean]> => {
    const of = runs.get(scenario)!;
    const served = PEERS.filter((peer) => of[peer].length > 0);
    const leads = served.map((peer) => ({ peer, lead: median(ratios(of, 'service as shipped', peer)) }));
    const closest = Math.min(...leads.map(({ lead }) => lead));
    const each = leads.map(({ peer, lead }) => `${peer} ${lead.toFixed(2)}`).join(', ');
    const mine = cpuOf(of['service as shipped']);
    const shares = served.map((peer) => ({ peer, share: mine / cpuOf(of[peer]) }));
    const largest = Math.max(...shares.map(({ share }) => share));
    const eachShare = shares.map(({ peer, share }) => `${peer} ${share.toFixed(2)}`).join(', ');
    return [
      [
        `sqlite: ${scenario} ≥ ${PEER_TARGET_RATIO} × every peer's req/s, as shipped: ${closest.toFixed(2)} (${each})`,
        closest >= PEER_TARGET_RATIO,
      ],
      [
        `sqlite: ${scenario} CPU a request ≤ ${PEER_CPU_TARGET_SHARE} × the closest peer's, as shipped: ${largest.toFixed(2)} (${eachShare})`,
        largest <= PEER_CPU_TARGET_SHARE,
      ],
    ];
  });
}
