// What the operator is told of the service's dependencies (the database: SQLite, PostgreSQL or
// PgBouncer, and behind PgBouncer which side went away; Redis): one line when one stops answering,
// naming it, where it is and why, and one when it answers again, with how long it was gone and
// how many requests it cost meanwhile. Not a line
// per failed request: during an expected outage those would be hundreds a second, each with a
// driver's stack; each request's detail is at debug level (LOG_LEVEL=debug), on the request's own
// logger. The state is also a metric (animal_store_dependency_up: src/observability/metrics.ts).
//
// A tracker learns of faults from where they are found (the request that hit one, a readiness
// probe) and of recovery from a success; while a dependency is down, a tracker given a probe tries
// it once a second, so the "back" line comes within about a second of its return, with or without
// traffic.
import type { Logger } from 'pino';
import { databaseFault, describeDatabaseFault, faultSideBehindPooler } from '../db/database-errors.js';
import type { DatabaseDependency } from '../db/providers.js';

type DependencyKind = DatabaseDependency['kind'] | 'redis';

/** How often a tracker with a probe tries a dependency that is down. */
const PROBE_INTERVAL_MS = 1_000;

/** Where a line goes: the service's logger, or a request's (its id and trace on every line). */
interface LineLog {
  debug(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface DependencyOptions {
  kind: DependencyKind;
  /** As the operator knows it: PostgreSQL, PgBouncer, SQLite, Redis. */
  name: string;
  /** Where it is (host:port, a file): never a password. */
  target: string;
  /** What its absence costs, for the "down" line: "requests that need the database are answered 503". */
  whileDown: string;
  /** What the requests counted meanwhile were, for the "back" line: "requests were answered 503". */
  counted: string;
  /** One short line for a fault (the "down" line's `cause`): no stack, no multi-line driver text. */
  describe(error: unknown): string;
  /** Tried once a second while it is down; resolving means it answers again. */
  probe?: () => Promise<unknown>;
  /**
   * A pooler's: which side of it went away, from the outage's first fault, for both lines: the
   * server behind it (`{ name: 'PostgreSQL behind PgBouncer', side: 'postgresql' }`) or itself.
   */
  sideOf?(error: unknown): { name: string; side: string };
}

/** A dependency's state, for the metrics. */
export interface DependencyState {
  kind: DependencyKind;
  up: boolean;
  /** Requests that could not use it, since the process started. */
  failedRequests: number;
}

export class DependencyTracker {
  private downSince: number | null = null;
  /** Who the lines of the current outage name: `name`, or the side `sideOf` found (and its `side` field). */
  private downName: string;
  private side: string | undefined;
  /** Requests that could not use it during the current outage. */
  private failedWhileDown = 0;
  private failedTotal = 0;
  private probeTimer: NodeJS.Timeout | undefined;
  private probing = false;
  private closed = false;

  constructor(
    private readonly options: DependencyOptions,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.downName = options.name;
  }

  /**
   * A request could not use it: counted, its detail (`error`, with the request's id when `log` is
   * the request's logger) at debug level, and the "down" line when this is the first.
   */
  failed(error?: unknown, log: LineLog = this.logger, detail = `${this.options.name} could not serve a request`): void {
    this.failedTotal++;
    this.failedWhileDown++;
    if (error !== undefined) log.debug({ dependency: this.options.kind, err: error }, detail);
    this.wentDown(error);
  }

  /** A check that is not a client's request (a readiness probe, connecting at start) found it down: nothing counted. */
  noticed(error: unknown): void {
    this.wentDown(error);
  }

  /** It answered: the "back" line, when it was down. */
  succeeded(): void {
    if (this.downSince === null) return;
    const downForMs = this.now() - this.downSince;
    const { kind, target, counted } = this.options;
    this.logger.info(
      { dependency: kind, side: this.side, target, downForMs, failedRequests: this.failedWhileDown },
      `${this.downName} answers again after ${(downForMs / 1000).toFixed(1)} s; ${this.failedWhileDown} ${counted} meanwhile`,
    );
    this.downSince = null;
    this.failedWhileDown = 0;
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
  }

  state(): DependencyState {
    return { kind: this.options.kind, up: this.downSince === null, failedRequests: this.failedTotal };
  }

  /** Stops probing (the service is closing). */
  close(): void {
    this.closed = true;
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
  }

  private wentDown(error: unknown): void {
    if (this.downSince !== null || this.closed) return;
    this.downSince = this.now();
    const { kind, name, target, whileDown, describe, probe, sideOf } = this.options;
    const side = sideOf?.(error);
    this.downName = side?.name ?? name;
    this.side = side?.side;
    this.logger.warn(
      { dependency: kind, side: this.side, target, cause: error === undefined ? undefined : describe(error) },
      `${this.downName} is not answering: ${whileDown}`,
    );
    if (probe) this.probeTimer = setInterval(() => this.tryProbe(probe), PROBE_INTERVAL_MS).unref();
  }

  private tryProbe(probe: () => Promise<unknown>): void {
    if (this.probing) return;
    this.probing = true;
    probe().then(
      () => {
        this.probing = false;
        if (!this.closed) this.succeeded();
      },
      () => {
        this.probing = false;
      },
    );
  }
}

/**
 * The database's tracker, for the places that see a request's database error. An outage (a fault
 * src/db/database-errors.ts calls 'unavailable') is the tracker's: counted, one line each way. The
 * other faults, which an operator must act on (a full disk, a pooler not named in DATABASE_URL), and
 * errors that are no database fault at all, stay a warning of their own, as each request sees them.
 */
export class DatabaseHealth {
  constructor(readonly tracker: DependencyTracker) {}

  /** A request's database error; `what` says what the request could not do. */
  failed(error: unknown, log: LineLog, what: string): void {
    if (databaseFault(error) === 'unavailable') this.tracker.failed(error, log, what);
    else log.warn({ err: error }, what);
  }

  /**
   * A readiness probe's error: the same, but not a client's request, so not counted. A probe that
   * got no answer in time (no driver error to classify) is an outage too.
   */
  noticed(error: unknown, log: LineLog, what: string): void {
    const fault = databaseFault(error);
    if (fault === 'storage' || fault === 'configuration') return log.warn({ err: error }, what);
    log.debug({ err: error }, what);
    this.tracker.noticed(error);
  }

  succeeded(): void {
    this.tracker.succeeded();
  }
}

/** The database's tracker: named by its URL, probed with its readiness query while down. */
export function databaseHealth(database: { dependency: DatabaseDependency; ping(): Promise<void> }, logger: Logger): DatabaseHealth {
  const { kind, name, target } = database.dependency;
  return new DatabaseHealth(
    new DependencyTracker(
      {
        kind,
        name,
        target,
        whileDown: 'requests that need the database are answered 503 until it is back',
        counted: 'requests were answered 503',
        describe: describeDatabaseFault,
        probe: () => database.ping(),
        sideOf:
          kind === 'pgbouncer'
            ? (error) =>
                faultSideBehindPooler(error) === 'server' ? { name: `PostgreSQL behind ${name}`, side: 'postgresql' } : { name, side: kind }
            : undefined,
      },
      logger,
    ),
  );
}

/** Redis's tracker: named with its host and port; the limiter's own retries find it back (src/limits/redis-limiter.ts). */
export function redisTracker(redisUrl: string, logger: Logger, describe: (error: unknown) => string): DependencyTracker {
  const url = new URL(redisUrl);
  return new DependencyTracker(
    {
      kind: 'redis',
      name: 'Redis',
      target: `${url.hostname}:${url.port || '6379'}`,
      whileDown: "request limits fall back to each instance's own counts until it is back",
      counted: "limit checks used this instance's own counts",
      describe,
    },
    logger,
  );
}
