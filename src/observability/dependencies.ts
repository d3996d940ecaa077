// A dependency's outage as two log lines ("not answering", "answers again") and a metric, not a line per
// failed request (hundreds a second, each with a stack); each request's detail is at debug level.
// @see docs/observability.md "When a dependency stops answering"
import type { Logger } from 'pino';
import { databaseFault, describeDatabaseFault, faultSideBehindPooler } from '../db/database-errors.js';
import type { DatabaseDependency } from '../db/providers.js';

type DependencyKind = DatabaseDependency['kind'] | 'redis';

const PROBE_INTERVAL_MS = 1_000;

/** Where a line goes: the service's logger, or a request's (its id and trace on every line). */
interface LineLog {
  debug(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface DependencyOptions {
  kind: DependencyKind;
  name: string;
  /** Where it is (host:port, a file): never a password. */
  target: string;
  /** For the "down" line: what its absence costs. */
  whileDown: string;
  /** For the "back" line: what the requests counted meanwhile were. */
  counted: string;
  describe(error: unknown): string;
  /** Tried once a second while it is down; resolving means it answers again. */
  probe?: () => Promise<unknown>;
  /** A pooler's: which side of it went away (the server behind it, or itself), from the outage's first fault. */
  sideOf?(error: unknown): { name: string; side: string };
}

export interface DependencyState {
  kind: DependencyKind;
  up: boolean;
  /** Since the process started. */
  failedRequests: number;
}

export class DependencyTracker {
  private downSince: number | null = null;
  private downName: string;
  private side: string | undefined;
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

  /** A request could not use it: counted, its detail at debug level on `log`, the "down" line if first. */
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
 * Only an 'unavailable' fault is the tracker's outage; the faults an operator must act on (a full disk,
 * an unmarked pooler) and non-faults stay a warning per request.
 */
export class DatabaseHealth {
  constructor(readonly tracker: DependencyTracker) {}

  failed(error: unknown, log: LineLog, what: string): void {
    if (databaseFault(error) === 'unavailable') this.tracker.failed(error, log, what);
    else log.warn({ err: error }, what);
  }

  /** A readiness probe's error: not counted; one that got no answer in time is an outage too. */
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

/** Probed with the readiness query while down. */
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

/** No probe: the limiter's own retries find Redis back (src/limits/redis-limiter.ts). */
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
