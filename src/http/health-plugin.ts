// Health checks for load balancers and orchestrators, at the root (not under /v1: they are not
// part of the versioned API) and without authentication: they carry no data.
//   GET /healthz  liveness: the process is up and serving HTTP. Restart it when this fails.
//   GET /readyz   readiness: the database answers a trivial query in time, and writes are not
//                 failing for lack of space (src/db/storage-health.ts). Send it traffic only
//                 while this is 200; a 503 (in the error envelope, with Retry-After) means "not now".
import type { FastifyPluginAsync } from 'fastify';
import type { Database } from '../db/database.js';
import { RETRY_AFTER_SECONDS } from '../db/database-errors.js';
import type { StorageHealth } from '../db/storage-health.js';
import { sendError } from '../api/errors.js';
import type { DatabaseHealth } from '../observability/dependencies.js';

/** How long /readyz waits for the database: a balancer's probe should not hang on a stuck one. */
const READINESS_TIMEOUT_MS = 2_000;

export interface HealthPluginOptions {
  database: Pick<Database, 'ping'>;
  storage: Pick<StorageHealth, 'writesFailing'>;
  /** Told of each probe's outcome: an outage is one line when it starts and one when it ends. */
  databaseHealth?: Pick<DatabaseHealth, 'noticed' | 'succeeded'>;
}

/** Resolves when `promise` does, rejects when it rejects or takes longer than `ms`. */
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

export const healthPlugin: FastifyPluginAsync<HealthPluginOptions> = async (app, { database, storage, databaseHealth }) => {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (request, reply) => {
    try {
      await within(database.ping(), READINESS_TIMEOUT_MS);
    } catch (error) {
      // The cause is for the operator's log (src/observability/dependencies.ts); the probe only needs the verdict.
      databaseHealth?.noticed(error, request.log, 'readiness check failed: the database is not answering');
      reply.header('retry-after', String(RETRY_AFTER_SECONDS.unavailable));
      return sendError(reply, 503, 'The database is not answering; try again later.');
    }
    databaseHealth?.succeeded();
    if (storage.writesFailing()) {
      request.log.warn('readiness check failed: writes are failing for lack of space');
      reply.header('retry-after', String(RETRY_AFTER_SECONDS.storage));
      return sendError(reply, 503, 'Writes are failing: the database has no space left (reads are still served).');
    }
    return { status: 'ok' };
  });
};
