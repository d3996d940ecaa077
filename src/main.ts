// The service's entry point (`npm start`): read the settings, migrate the database, listen, and
// stop cleanly on SIGTERM/SIGINT, behind a load balancer too (docs/operations.md, "Stopping").
import { setTimeout as sleep } from 'node:timers/promises';
import { getHeapStatistics } from 'node:v8';
import { buildApp } from './app.js';
import { addAcceptors, assertPortFree } from './http/acceptors.js';
import { createApiKeyStore } from './auth/api-key-store.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { openDatabase } from './db/database.js';
import { migrateInChildProcess } from './db/migrate-in-child.js';
import { providerOf, sqliteFilePath } from './db/providers.js';
import { createLogger } from './logger.js';
import { listenFailureMessage, type Listener } from './runtime/listen-failure.js';

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
}

const config = readConfig();
const logger = createLogger(config);
// What this process runs with, however it was started (npm start, node dist/start.js, a container's
// CMD): the Node release, its command-line flags, and V8's heap limit, which the operator's
// NODE_OPTIONS memory bounds set (docs/operations.md, "The process's memory settings").
logger.info(
  { node: process.version, execArgv: process.execArgv, heapLimitMiB: Math.round(getHeapStatistics().heap_size_limit / 2 ** 20) },
  'runtime',
);

/**
 * A database that cannot be opened (a read-only or missing directory, a server that refuses) stops
 * start-up with one clear line, not a driver's stack trace.
 */
async function orStop<T>(step: Promise<T>): Promise<T> {
  try {
    return await step;
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    const where =
      providerOf(config.databaseUrl) === 'sqlite' ? `the SQLite file ${sqliteFilePath(config.databaseUrl)}` : 'the PostgreSQL database';
    const hint =
      providerOf(config.databaseUrl) === 'sqlite'
        ? ' Check that its directory exists, or can be created, and is writable by this user.'
        : ' Check DATABASE_URL and that the server is running.';
    logger.fatal({ reason, code: (error as { code?: unknown }).code }, `Cannot open ${where}: ${reason}.${hint}`);
    process.exit(1);
  }
}

// In a child process, so that the schema engine's memory does not stay in this one (migrate-in-child.ts).
const applied = await orStop(migrateInChildProcess(config.databaseMigrationUrl));
logger.info({ applied }, applied.length ? 'database migrated' : 'database is up to date');
const database = await orStop(openDatabase(config, logger));

if (config.apiKeys.length === 0) {
  const keys = createApiKeyStore(database.prisma);
  if ((await keys.countActive()) === 0) {
    if (config.nodeEnv === 'production') {
      logger.fatal('No API key exists: set API_KEYS, or create one with `npm run keys -- create --name <name>`.');
      await database.close();
      process.exit(1);
    }
    // A new user can call the API at once. The key goes to the terminal (stderr), never to the
    // log: it is shown this once, and only its digest is stored.
    const { key, record } = await keys.create(`dev-${new Date().toISOString().slice(0, 19).replace(/\D/g, '')}`);
    logger.warn({ keyName: record.name }, 'no API key existed: created one for development (printed on stderr)');
    process.stderr.write(`\nDevelopment API key "${record.name}" (shown once; keep it):\n  Authorization: Bearer ${key}\n\n`);
  }
}

const app = await buildApp({ config, database, logger });

let stopping = false;
/** Stops the listening sockets beside the server's own, once their connections have closed (set once it listens). */
let stopAcceptors = async () => {};
/**
 * The stop: first, on SIGTERM (what balancers' platforms send; not Ctrl-C's SIGINT, which stops at
 * once), the drain (SHUTDOWN_DRAIN_MS), in which /readyz answers 503 while everything is
 * still served and accepted, each answer with `Connection: close`, so that balancers take the
 * instance out before it stops listening; then Fastify's close (stop listening, close idle
 * connections, let the answers in flight finish); then the database. All within
 * SHUTDOWN_TIMEOUT_MS of the signal, else exit 1.
 */
async function shutdown(signal: string): Promise<void> {
  if (stopping) {
    logger.warn({ signal }, 'second signal: exiting now');
    process.exit(1);
  }
  stopping = true;
  const drainMs = signal === 'SIGTERM' ? config.shutdownDrainMs : 0;
  logger.info({ signal, drainMs, timeoutMs: config.shutdownTimeoutMs }, 'shutting down');
  setTimeout(() => {
    logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown took too long: exiting');
    process.exit(1);
  }, config.shutdownTimeoutMs).unref();
  app.beginDraining();
  await sleep(drainMs);
  logger.info('drained: closing the listener and idle connections');
  // Fastify's close ends idle connections and waits for the answers in flight on its own socket's;
  // the acceptors' close waits for theirs (src/http/acceptors.ts).
  await Promise.all([app.close(), stopAcceptors()]);
  await database.close();
  process.exit(0); // the log's pending lines are written at exit (src/logger.ts)
}
process.on('SIGTERM', (signal) => void shutdown(signal));
process.on('SIGINT', (signal) => void shutdown(signal));

// Where it listens, said once on its own line (with PORT=0 the port is only known now); a port that
// cannot be taken (in use, privileged, a HOST not of this machine) stops it with one sentence.
const listeners: Listener[] = [{ setting: 'PORT', hostSetting: 'HOST', host: config.host, port: config.port }];
if (config.metricsEnabled && config.metricsPort !== null) {
  listeners.push({ setting: 'METRICS_PORT', hostSetting: 'METRICS_HOST', host: config.metricsHost, port: config.metricsPort });
}
// Passed on to net.Server#listen (Fastify's types do not name `reusePort`): the listen queue's length,
// and SO_REUSEPORT for the acceptors beside the server's socket (src/http/acceptors.ts).
const socketOptions = { backlog: config.listenBacklog, reusePort: true };
try {
  await assertPortFree(config.host, config.port);
  await app.listen({
    host: config.host,
    port: config.port,
    ...socketOptions,
    listenTextResolver: (address) => `API listening at ${address} (REST /v1, tRPC /trpc, docs ${address}/v1/docs)`,
  });
} catch (error) {
  const message = listenFailureMessage(error, listeners);
  if (!message) throw error;
  logger.fatal({ code: (error as { code?: unknown }).code }, message);
  await database.close();
  process.exit(1);
}
stopAcceptors = await addAcceptors(app.server, config.listenSockets, config.listenBacklog);
