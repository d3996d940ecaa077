// A real service for tests: a database of its own, of this run's kind (a SQLite file in a temporary
// directory, a new PostgreSQL database, or one through PgBouncer: test/support/test-database.ts),
// copied from the run's migrated template and checked the way `npm start` checks it, behind a real
// HTTP server on 127.0.0.1 and a free port.
import { pino, type Logger } from 'pino';
import type { AppRouter } from '../../src/api/root-router.js';
import { buildApp, type App, type AppConfig } from '../../src/app.js';
import { parseConfig } from '../../src/config.js';
import { migrateDatabase, openDatabase, type Database } from '../../src/db/database.js';
import { createMigratedTestDatabase, type DatabaseKind } from './test-database.js';

export const API_KEY = 'test-key-0123456789abcdef';
export const OTHER_API_KEY = 'other-key-0123456789abcdef';

export interface TestServer {
  app: App;
  database: Database;
  /** The DATABASE_URL of its database. */
  databaseUrl: string;
  /** Where it was migrated (DATABASE_DIRECT_URL): `databaseUrl`, or a direct connection when that goes through PgBouncer. */
  databaseMigrationUrl: string;
  baseUrl: string;
  /** fetch() against the server, with the API key unless `headers.authorization` says otherwise. */
  request(path: string, init?: RequestInit): Promise<Response>;
  /** POST a JSON body (given as a value, or as raw text when it is a string). */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
}

/** Settings of test servers: the defaults, with limits high enough not to get in the way. */
export const TEST_CONFIG: AppConfig = {
  // The service's own defaults (so a new setting needs no change here), then what tests need.
  ...parseConfig({}),
  apiKeys: [API_KEY, OTHER_API_KEY],
  rateLimitPerMinute: 1_000_000,
  authFailuresPerMinute: 1_000_000,
};

export interface TestServerOptions {
  /** Service settings that differ from TEST_CONFIG. */
  config?: Partial<AppConfig>;
  /** The database kind; by default this run's (TEST_DATABASE). */
  provider?: DatabaseKind;
  /** For PostgreSQL: the server to create the database on (by default this run's, from test/global-setup.ts). */
  postgresServerUrl?: string;
  /** Connection settings as the environment would give them (DATABASE_QUERY_TIMEOUT_MS…); the service's defaults otherwise. */
  databaseSettings?: Record<string, string>;
  /** Where the server logs; silent unless a test reads the log. */
  logger?: Logger;
  /** The procedures to serve; the app's (`appRouter`) unless a test serves more. */
  router?: AppRouter;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const testDatabase = await createMigratedTestDatabase(options.provider, options.postgresServerUrl);
  // What `npm start` does first: here it finds every migration applied and applies nothing.
  await migrateDatabase(testDatabase.migrationUrl);
  const logger = options.logger ?? pino({ level: 'silent' });
  const database = await openDatabase(parseConfig({ ...options.databaseSettings, DATABASE_URL: testDatabase.url }), logger);
  const app = await buildApp({ config: { ...TEST_CONFIG, ...options.config }, database, logger, router: options.router });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('server has no port');
  const baseUrl = `http://127.0.0.1:${address.port}`;

  const request = (path: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (!headers.has('authorization')) headers.set('authorization', `Bearer ${API_KEY}`);
    return fetch(baseUrl + path, { ...init, headers });
  };

  return {
    app,
    database,
    databaseUrl: testDatabase.url,
    databaseMigrationUrl: testDatabase.migrationUrl,
    baseUrl,
    request,
    post: (path, body, headers = {}) =>
      request(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    async close() {
      await app.close();
      await database.close();
      await testDatabase.drop();
    },
  };
}

/** The JSON body of a response, typed loosely: tests check its shape with expect(). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests assert the exact shape of each JSON answer (eslint.config.js)
export async function json(response: Response | Promise<Response>): Promise<any> {
  return (await response).json();
}
