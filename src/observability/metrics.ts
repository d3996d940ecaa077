// The service's Prometheus metrics: names, labels, buckets. The request metrics are prom-client's own
// objects, filled once per answered request by src/http/request-record.ts (requestRecorder). Every label value comes from a closed set, so the
// series stay bounded whatever URLs callers send. @see docs/observability.md "Metrics (Prometheus)"
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { BuildInfo } from '../config.js';
import type { PoolStats } from '../db/database.js';
import type { DependencyState } from './dependencies.js';

/** 'other': health, metrics, unknown paths. */
export type Surface = 'rest' | 'trpc' | 'other';

/** The route label of requests that are not one known route (unknown path or method; a tRPC batch of several calls). */
export const ROUTE_LABELS = {
  unmatched: '(unmatched)',
  batch: '(batch)',
} as const;

/** Finer at the low end than prom-client's default: an idle service answers in about a millisecond. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const REQUEST_LABELS = ['surface', 'route', 'method', 'status_code'] as const;

export interface ServiceMetrics {
  /** Everything /metrics exposes: this service's metrics and the process's. */
  registry: Registry;
  /** Per answered request: its duration by surface, route (a pattern, a procedure, or one of ROUTE_LABELS), method, status. */
  duration: Histogram<(typeof REQUEST_LABELS)[number]>;
  rateLimitRefusals: Counter<'surface' | 'limit'>;
  authenticationFailures: Counter<'surface' | 'reason'>;
  idempotentReplays: Counter<'surface'>;
  databaseUnavailable: Counter<'surface'>;
  /** Calls inside a tRPC batch of several. */
  batchedCalls: Counter<'procedure'>;
}

/** What the connection limits did so far (src/http/connections.ts). */
interface ConnectionCounts {
  open: number;
  refused: number;
  reclaimed: number;
  sendTimeouts: number;
  unsentReclaimed: number;
}

let processRegistry: Registry | undefined;

/** Gauges named like counters, which `promtool check metrics` refuses; each is the sum of its labelled twin. */
export const DROPPED_DEFAULT_METRICS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** prom-client's defaults, once per process: each collection starts monitors that are never stopped. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
    for (const name of DROPPED_DEFAULT_METRICS) processRegistry.removeSingleMetric(name);
  }
  return processRegistry;
}

/** The metrics of one app; the gauges of each option left out without it (no pool on SQLite). Read at each scrape. */
export function createServiceMetrics(
  options: {
    poolStats?: () => PoolStats | null;
    connections?: () => ConnectionCounts;
    dependencies?: () => readonly DependencyState[];
    build?: BuildInfo;
  } = {},
): ServiceMetrics {
  const registry = new Registry();
  const registers = [registry];

  const { build } = options;
  if (build) {
    new Gauge({
      name: 'animal_store_build_info',
      help: 'Always 1: the version (package.json), the git commit dist/ was built from, and the Node release this instance runs.',
      labelNames: ['version', 'commit', 'node'],
      registers,
    }).set({ version: build.version, commit: build.commit, node: process.version }, 1);
  }

  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from the request arriving to its response being sent, in seconds.',
    labelNames: REQUEST_LABELS,
    buckets: DURATION_BUCKETS,
    registers,
  });
  // The histogram's counts under the name dashboards look for, copied at each scrape: one observation a
  // request, not two (docs/benchmarks.md, "`http_requests_total` copied from the histogram").
  new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by surface, route pattern, method and status code.',
    labelNames: REQUEST_LABELS,
    registers,
    async collect() {
      this.reset();
      for (const { metricName, labels, value } of (await duration.get()).values) {
        if (metricName === 'http_request_duration_seconds_count') this.inc(labels, value);
      }
    },
  });
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Counter({ name, help, labelNames, registers });
  const rateLimitRefusals = counter(
    'animal_store_rate_limit_refusals_total',
    'Requests refused with 429, by limit: per_key (requests per API key) or auth_failures (wrong keys per address).',
    ['surface', 'limit'],
  );
  const authenticationFailures = counter(
    'animal_store_authentication_failures_total',
    'Requests refused with 401, by reason: missing_key or invalid_key.',
    ['surface', 'reason'],
  );
  const idempotentReplays = counter(
    'animal_store_idempotent_replays_total',
    'Creates answered from an earlier request with the same Idempotency-Key (nothing created).',
    ['surface'],
  );
  const databaseUnavailable = counter(
    'animal_store_database_unavailable_total',
    'Requests answered 503 because the database could not serve (unreachable, timed out, pool exhausted, locked).',
    ['surface'],
  );
  const batchedCalls = counter(
    'animal_store_trpc_batched_calls_total',
    'Calls inside tRPC batches of several calls, by procedure (a batch is one request in http_requests_total).',
    ['procedure'],
  );

  // Every label value from 0, so a rate() or an alert has a series from the first scrape.
  for (const surface of ['rest', 'trpc'] as const) {
    for (const limit of ['per_key', 'auth_failures'] as const) rateLimitRefusals.inc({ surface, limit }, 0);
    for (const reason of ['missing_key', 'invalid_key'] as const) authenticationFailures.inc({ surface, reason }, 0);
    idempotentReplays.inc({ surface }, 0);
  }
  for (const surface of ['rest', 'trpc', 'other'] as const) databaseUnavailable.inc({ surface }, 0);

  const { connections } = options;
  if (connections) {
    new Gauge({
      name: 'animal_store_open_connections',
      help: 'Client connections open now (MAX_CONNECTIONS bounds them).',
      registers,
      collect() {
        this.set(connections().open);
      },
    });
    const total = (name: string, help: string, read: (counts: ConnectionCounts) => number) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(read(connections()));
        },
      });
    total(
      'animal_store_connections_refused_total',
      'Connections closed on arrival: over MAX_CONNECTIONS_PER_ADDRESS, or over MAX_CONNECTIONS with none idle.',
      (c) => c.refused,
    );
    total(
      'animal_store_connections_reclaimed_total',
      'Idle connections closed to make room for a new one at MAX_CONNECTIONS.',
      (c) => c.reclaimed,
    );
    new Counter({
      name: 'animal_store_slow_reader_closes_total',
      help: 'Connections closed because they did not read their answers: send_timeout (an answer took no byte for SEND_TIMEOUT_MS) or unsent_total (the unsent answers of all connections over their bound; the slowest closed).',
      labelNames: ['reason'],
      registers,
      collect() {
        const { sendTimeouts, unsentReclaimed } = connections();
        this.reset();
        this.inc({ reason: 'send_timeout' }, sendTimeouts);
        this.inc({ reason: 'unsent_total' }, unsentReclaimed);
      },
    });
  }

  const { dependencies } = options;
  if (dependencies) {
    new Gauge({
      name: 'animal_store_dependency_up',
      help: 'Whether a dependency answers (1) or not (0), as this instance last found it: the database (sqlite, postgresql or pgbouncer) and redis.',
      labelNames: ['dependency'],
      registers,
      collect() {
        for (const { kind, up } of dependencies()) this.set({ dependency: kind }, up ? 1 : 0);
      },
    });
    new Counter({
      name: 'animal_store_dependency_failed_requests_total',
      help: "Requests that could not use a dependency: answered 503 (the database), or limited by this instance's own counts (redis).",
      labelNames: ['dependency'],
      registers,
      collect() {
        this.reset();
        for (const { kind, failedRequests } of dependencies()) this.inc({ dependency: kind }, failedRequests);
      },
    });
  }

  const { poolStats } = options;
  if (poolStats && poolStats() !== null) {
    const poolGauge = (name: string, help: string, read: (stats: PoolStats) => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const stats = poolStats();
          if (stats) this.set(read(stats));
        },
      });
    poolGauge('animal_store_db_pool_connections', "PostgreSQL connections open in this instance's pool (idle or in use).", (s) => s.total);
    poolGauge('animal_store_db_pool_idle_connections', 'PostgreSQL connections open and idle.', (s) => s.idle);
    poolGauge(
      'animal_store_db_pool_connections_in_use',
      'PostgreSQL connections taken by a query or transaction (or being opened for one): open minus idle.',
      (s) => s.total - s.idle,
    );
    poolGauge(
      'animal_store_db_pool_waiting_queries',
      'Queries waiting for a free connection (the pool is exhausted while above 0).',
      (s) => s.waiting,
    );
    poolGauge('animal_store_db_pool_max_connections', 'The most connections the pool opens (DATABASE_POOL_SIZE).', (s) => s.max);
    new Counter({
      name: 'animal_store_db_pool_queue_full_total',
      help: 'Queries refused at once (503) because DATABASE_POOL_QUEUE_LIMIT queries were already waiting for a connection.',
      registers,
      collect() {
        const stats = poolStats();
        this.reset();
        if (stats) this.inc(stats.queueFull);
      },
    });
  }

  return {
    registry: Registry.merge([registry, processMetrics()]),
    duration,
    rateLimitRefusals,
    authenticationFailures,
    idempotentReplays,
    databaseUnavailable,
    batchedCalls,
  };
}
