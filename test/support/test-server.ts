// A real service for tests: a fresh SQLite file in a temporary directory, migrated the way
// `npm start` does it, behind a real HTTP server on 127.0.0.1 and a free port.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { buildApp, type App } from '../../src/app.js';
import { migrateDatabase, openDatabase, type Database } from '../../src/db/database.js';

export const API_KEY = 'test-key-0123456789abcdef';
export const OTHER_API_KEY = 'other-key-0123456789abcdef';

export interface TestServer {
  app: App;
  database: Database;
  /** The SQLite file behind it, as a DATABASE_URL. */
  databaseUrl: string;
  baseUrl: string;
  /** fetch() against the server, with the API key unless `headers.authorization` says otherwise. */
  request(path: string, init?: RequestInit): Promise<Response>;
  /** POST a JSON body (given as a value, or as raw text when it is a string). */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  bodyLimitBytes?: number;
  /** Where the server logs; silent unless a test reads the log. */
  logger?: Logger;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-test-'));
  const databaseUrl = `file:${join(dir, 'animal-store.db')}`;
  await migrateDatabase(databaseUrl);
  const database = await openDatabase(databaseUrl);
  const app = await buildApp({
    config: { apiKeys: [API_KEY, OTHER_API_KEY], bodyLimitBytes: options.bodyLimitBytes ?? 64 * 1024 },
    database,
    logger: options.logger ?? pino({ level: 'silent' }),
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
    databaseUrl,
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
