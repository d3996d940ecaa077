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
// What this process runs with, however it was started; the heap limit comes from the operator's NODE_OPTIONS.
logger.info(
  { node: process.version, execArgv: process.execArgv, heapLimitMiB: Math.round(getHeapStatistics().heap_size_limit / 2 ** 20) },
  'runtime',
);

/** A database that cannot be opened stops start-up with one clear line, not a driver's stack trace. */
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
    // A new user can call the API at once. The key goes to stderr, never to the log: only its digest is stored.
    const { key, record } = await keys.create(`dev-${new Date().toISOString().slice(0, 19).replace(/\D/g, '')}`);
    logger.warn({ keyName: record.name }, 'no API key existed: created one for development (printed on stderr)');
    process.stderr.write(`\nDevelopment API key "${record.name}" (shown once; keep it):\n  Authorization: Bearer ${key}\n\n`);
  }
}

const app = await buildApp({ config, database, logger });

let stopping = false;
/** Stops the listening sockets beside the server's own (set once it listens). */
let stopAcceptors = async () => {};
/**
 * The stop: on SIGTERM (not Ctrl-C's SIGINT) the drain, so that balancers take the instance out before it
 * stops listening; then Fastify's close; then the database. All within SHUTDOWN_TIMEOUT_MS, else exit 1.
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
  // Each waits for the answers in flight on its own sockets' connections.
  await Promise.all([app.close(), stopAcceptors()]);
  await database.close();
  process.exit(0); // the log's pending lines are written at exit (src/logger.ts)
}
process.on('SIGTERM', (signal) => void shutdown(signal));
process.on('SIGINT', (signal) => void shutdown(signal));

// A port that cannot be taken (in use, privileged, a HOST not of this machine) stops it with one sentence.
const listeners: Listener[] = [{ setting: 'PORT', hostSetting: 'HOST', host: config.host, port: config.port }];
if (config.metricsEnabled && config.metricsPort !== null) {
  listeners.push({ setting: 'METRICS_PORT', hostSetting: 'METRICS_HOST', host: config.metricsHost, port: config.metricsPort });
}
// Passed on to net.Server#listen (Fastify's types do not name `reusePort`): SO_REUSEPORT for the acceptors.
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
