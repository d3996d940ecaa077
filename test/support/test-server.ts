// A real service for tests: a fresh SQLite file in a temporary directory, migrated the way
// `npm start` does it, behind a real HTTP server on 127.0.0.1 and a free port.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildApp, type App, type AppConfig } from '../../src/app.js';
import { migrateDatabase, openDatabase, type Database } from '../../src/db/database.js';

export const API_KEY = 'test-key-0123456789abcdef';
export const OTHER_API_KEY = 'other-key-0123456789abcdef';

export interface TestServer {
  app: App;
  database: Database;
  baseUrl: string;
  /** fetch() against the server, with the API key unless `headers.authorization` says otherwise. */
  request(path: string, init?: RequestInit): Promise<Response>;
  /** POST a JSON body (given as a value, or as raw text when it is a string). */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
}

/** Settings of test servers: the defaults, with limits high enough not to get in the way. */
export const TEST_CONFIG: AppConfig = {
  apiKeys: [API_KEY, OTHER_API_KEY],
  bodyLimitBytes: 64 * 1024,
  rateLimitPerMinute: 1_000_000,
  authFailuresPerMinute: 1_000_000,
  idempotencyTtlMs: 24 * 3_600_000,
  corsOrigins: [],
  trustProxy: false,
};

export async function startTestServer(options: { config?: Partial<AppConfig> } = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-test-'));
  const databaseUrl = `file:${join(dir, 'animal-store.db')}`;
  await migrateDatabase(databaseUrl);
  const database = await openDatabase(databaseUrl);
  const app = await buildApp({
    config: { ...TEST_CONFIG, ...options.config },
    database,
    logger: pino({ level: 'silent' }),
  });
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
      rmSync(dir, { recursive: true, force: true });
    },
  };
}


/** The JSON body of a response, typed loosely: tests check its shape with expect(). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function json(response: Response | Promise<Response>): Promise<any> {
  return (await response).json();
}
