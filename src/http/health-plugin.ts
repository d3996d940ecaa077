// Health checks at the root, outside the versioned API and without authentication (no data):
//   GET /healthz  liveness: the process is up and serving HTTP.
//   GET /readyz   readiness: 503 while draining, or while this instance's own SQLite file does not
//                 answer or is full. A shared PostgreSQL only shows in the body: every instance would
//                 fail together (docs/decisions.md, "Readiness").
import type { FastifyPluginAsync } from 'fastify';
import type { Database } from '../db/database.js';
import { RETRY_AFTER_SECONDS } from '../db/database-errors.js';
import type { StorageHealth } from '../db/storage-health.js';
import type { DatabaseHealth } from '../observability/dependencies.js';
import { databaseFaultRefusal } from '../api/refusals.js';
import { recordRefusal } from './call-pipeline.js';
import { sendError } from './call-pipeline.js';

/** How long a probe of the database may take before it counts as down. */
const DATABASE_PROBE_TIMEOUT_MS = 2_000;
/** How long /readyz waits for a shared database's probe before answering the state last seen: a slow one must not fail balancer checks. */
const SHARED_PROBE_WAIT_MS = 250;

/** What /readyz says of the database: `full` is "answers, but writes fail for lack of space". */
type DatabaseState = 'up' | 'down' | 'full';

export interface HealthPluginOptions {
  database: Pick<Database, 'ping' | 'provider'>;
  storage: Pick<StorageHealth, 'writesFailing'>;
  /** True from the start of the stop's drain on. */
  draining: () => boolean;
  databaseHealth?: Pick<DatabaseHealth, 'noticed' | 'succeeded'>;
}

async function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export const healthPlugin: FastifyPluginAsync<HealthPluginOptions> = async (app, { database, storage, draining, databaseHealth }) => {
  const ownStorage = database.provider === 'sqlite';
  let lastSeen: DatabaseState = 'up';
  let probing: Promise<DatabaseState> | null = null;

  /** One probe at a time, however many checks arrive; each updates `lastSeen`. */
  function probe(log: (error: unknown) => void): Promise<DatabaseState> {
    probing ??= within(database.ping(), DATABASE_PROBE_TIMEOUT_MS)
      .then(
        (): DatabaseState => {
          databaseHealth?.succeeded();
          return storage.writesFailing() ? 'full' : 'up';
        },
        (error: unknown): DatabaseState => {
          log(error);
          return 'down';
        },
      )
      .then((state) => {
        lastSeen = state;
        probing = null;
        return state;
      });
    return probing;
  }

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (request, reply) => {
    if (draining()) {
      reply.header('retry-after', String(RETRY_AFTER_SECONDS.unavailable));
      return sendError(reply, 503, 'This instance is shutting down; send requests to another one.');
    }
    // The cause at debug level: the outage itself is logged once each way (databaseHealth).
    const current = probe((error) =>
      databaseHealth
        ? databaseHealth.noticed(error, request.log, 'readiness probe: the database did not answer')
        : request.log.debug({ err: error }, 'readiness probe: the database did not answer'),
    );
    const state = ownStorage ? await current : await within(current, SHARED_PROBE_WAIT_MS).catch(() => lastSeen);
    // Recorded as the database refusals of calls are (Retry-After; the metrics count it by its reason).
    if (ownStorage && state === 'down') {
      recordRefusal(reply, databaseFaultRefusal('unavailable'));
      return sendError(reply, 503, 'The database is not answering; try again later.');
    }
    if (ownStorage && state === 'full') {
      recordRefusal(reply, databaseFaultRefusal('storage'));
      return sendError(reply, 503, 'Writes are failing: the database has no space left (reads are still served).');
    }
    return { status: 'ok', database: state };
  });
};
