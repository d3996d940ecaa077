// The service's entry point (`npm start`): read the settings, migrate the database, listen, and
// shut down cleanly on SIGTERM/SIGINT.
import { randomBytes } from 'node:crypto';
import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { migrateDatabase, openDatabase } from './db/database.js';
import { createLogger } from './logger.js';

/** How long in-flight requests get to finish after SIGTERM before the process exits anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

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

let apiKeys = config.apiKeys;
if (apiKeys.length === 0) {
  // Only outside production (the settings refuse production without keys): a key for this run,
  // so that a new user can call the API at once. It is printed this once and kept nowhere.
  const key = randomBytes(24).toString('base64url');
  apiKeys = [key];
  logger.warn(`API_KEYS is not set, so this run accepts one generated key. Use: Authorization: Bearer ${key}`);
}

const applied = await migrateDatabase(config.databaseUrl);
logger.info({ applied }, applied.length ? 'database migrated' : 'database is up to date');
const database = await openDatabase(config);
const app = await buildApp({ config: { ...config, apiKeys }, database, logger });

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) {
    logger.warn({ signal }, 'second signal: exiting now');
    process.exit(1);
  }
  stopping = true;
  logger.info({ signal }, 'shutting down');
  setTimeout(() => {
    logger.error('shutdown took too long: exiting');
    process.exit(1);
  }, SHUTDOWN_GRACE_MS).unref();
  await app.close();
  await database.close();
  process.exit(0);
}
process.on('SIGTERM', (signal) => void shutdown(signal));
process.on('SIGINT', (signal) => void shutdown(signal));

await app.listen({ host: config.host, port: config.port });
