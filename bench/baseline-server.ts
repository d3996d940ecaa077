// THE BASELINE, NOT THE SERVICE. A bare node:http server on better-sqlite3 (statements prepared
// once) or pg (a pool, named prepared statements) answering what the benchmark sends, with the
// service's own API-key verifier and byte-for-byte the same JSON bodies: service/baseline is what
// the service's stack costs on top of the unavoidable work. Only REST list/create/get under /v1
// and pets.list / pets.create under /trpc (unbatched), with honest validation. Nothing in src/
// uses it. Started by bench/run.ts with BASELINE_PORT, BASELINE_DB (a SQLite file or a
// postgresql:// URL), API_KEYS (comma-separated) and BASELINE_POOL_SIZE.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createApiKeyVerifier } from '../src/auth/api-keys.js';
import { schemaLayout } from '../src/db/providers.js';

const port = Number(process.env.BASELINE_PORT);
const target = process.env.BASELINE_DB;
if (!target || !Number.isInteger(port)) throw new Error('BASELINE_PORT and BASELINE_DB are required');
const verifier = createApiKeyVerifier({ envKeys: (process.env.API_KEYS ?? '').split(',') });

/** A value now (SQLite) or later (PostgreSQL). */
type Maybe<T> = T | Promise<T>;

interface Store {
  list(limit: number): Maybe<unknown[]>;
  listByStatus(status: string, limit: number): Maybe<unknown[]>;
  byId(id: number): Maybe<unknown>;
  insert(name: string, categoryId: number, status: string): Maybe<unknown>;
}

/** The service's own migration files of a provider, in order. */
function migrationScripts(provider: 'sqlite' | 'postgresql'): string[] {
  const { migrationsDir } = schemaLayout(provider);
  return readdirSync(migrationsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((dir) => readFileSync(join(migrationsDir, dir, 'migration.sql'), 'utf8'));
}

const COLUMNS = 'id, name, category_id AS "categoryId", status';

function sqliteStore(file: string): Store {
  const db = new Database(file);
  // The same settings as the service's SQLite connection (src/db/database.ts).
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'pets'").get();
  if (!hasTable) for (const script of migrationScripts('sqlite')) db.exec(script);
  const listAll = db.prepare(`SELECT ${COLUMNS} FROM pets ORDER BY id LIMIT ?`);
  const listByStatus = db.prepare(`SELECT ${COLUMNS} FROM pets WHERE status = ? ORDER BY id LIMIT ?`);
  const byId = db.prepare(`SELECT ${COLUMNS} FROM pets WHERE id = ?`);
  const insert = db.prepare(`INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING ${COLUMNS}`);
  return {
    list: (limit) => listAll.all(limit),
    listByStatus: (status, limit) => listByStatus.all(status, limit),
    byId: (id) => byId.get(id),
    insert: (name, categoryId, status) => insert.all(name, categoryId, status)[0],
  };
}

async function postgresStore(url: string): Promise<Store> {
  // int8 (ids) as JSON numbers, as the service answers them.
  pg.types.setTypeParser(20, (text) => Number(text));
  const pool = new pg.Pool({ connectionString: url, max: Number(process.env.BASELINE_POOL_SIZE ?? 10) });
  const { rows } = await pool.query("SELECT to_regclass('public.pets') AS pets");
  if (!rows[0].pets) for (const script of migrationScripts('postgresql')) await pool.query(script);
  const rowsOf = async (name: string, text: string, values: unknown[]) => (await pool.query({ name, text, values })).rows;
  return {
    list: (limit) => rowsOf('list', `SELECT ${COLUMNS} FROM pets ORDER BY id LIMIT $1`, [limit]),
    listByStatus: (status, limit) =>
      rowsOf('list_status', `SELECT ${COLUMNS} FROM pets WHERE status = $1 ORDER BY id LIMIT $2`, [status, limit]),
    byId: async (id) => (await rowsOf('by_id', `SELECT ${COLUMNS} FROM pets WHERE id = $1`, [id]))[0],
    insert: async (name, categoryId, status) =>
      (
        await rowsOf('insert', `INSERT INTO pets (name, category_id, status) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`, [
          name,
          categoryId,
          status,
        ])
      )[0],
  };
}

const store = /^postgres(ql)?:\/\//.test(target) ? await postgresStore(target) : sqliteStore(target);

/** `then` without a microtask when the value is already there (SQLite), so that store stays synchronous. */
function when<T>(value: Maybe<T>, use: (value: T) => void): void | Promise<void> {
  return value instanceof Promise ? value.then(use) : use(value);
}

const STATUSES = new Set(['available', 'pending', 'sold']);
const DEPRECATION = {
  deprecation: '@1795219200',
  sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
  link: '</v1/docs#/Pets/listPets>; rel="deprecation"',
};

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function fail(res: ServerResponse, status: number, code: string, message: string): void {
  send(res, status, { code, message, status });
}

function list(limitParam: unknown, status: unknown): Maybe<unknown[]> | string {
  const limit =
    limitParam === undefined
      ? 20
      : typeof limitParam === 'string' && /^\d{1,3}$/.test(limitParam)
        ? Number(limitParam)
        : typeof limitParam === 'number'
          ? limitParam
          : NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) return 'limit: must be an integer in 1…100';
  if (status === undefined) return store.list(limit);
  if (typeof status !== 'string' || !STATUSES.has(status)) return 'status: must be one of available, pending, sold';
  return store.listByStatus(status, limit);
}

function create(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'body: must be a JSON object';
  const { name, categoryId, status = 'available', ...rest } = body as Record<string, unknown>;
  if (Object.keys(rest).length > 0) return 'unknown field';
  if (typeof name !== 'string' || name.length < 1 || name.length > 100 || !/\S/.test(name)) return 'name: invalid';
  if (!Number.isSafeInteger(categoryId) || (categoryId as number) < 1) return 'categoryId: invalid';
  if (typeof status !== 'string' || !STATUSES.has(status)) return 'status: invalid';
  return store.insert(name, categoryId as number, status);
}

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        resolve(undefined);
      }
    });
  });
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://baseline');
  const path = url.pathname;
  const isGet = req.method === 'GET';
  if (!(await verifier.authenticate(req.headers.authorization))) {
    if (path.startsWith('/trpc/')) {
      return send(res, 401, {
        error: { message: 'A valid API key is required', code: -32001, data: { code: 'UNAUTHORIZED', httpStatus: 401 } },
      });
    }
    return fail(res, 401, 'UNAUTHORIZED', 'A valid API key is required: send "Authorization: Bearer <key>".');
  }

  if (path === '/v1/pets' && isGet) {
    const pets = list(url.searchParams.get('limit') ?? undefined, url.searchParams.get('status') ?? undefined);
    return typeof pets === 'string' ? fail(res, 400, 'BAD_REQUEST', pets) : when(pets, (rows) => send(res, 200, rows));
  }
  if (path === '/v1/pets' && req.method === 'POST') {
    const pet = create(await readBody(req));
    return typeof pet === 'string' ? fail(res, 400, 'BAD_REQUEST', pet) : when(pet, (row) => send(res, 201, row));
  }
  const idMatch = /^\/v1\/pets\/(\d{1,16})$/.exec(path);
  if (idMatch && isGet) {
    return when(store.byId(Number(idMatch[1])), (pet) =>
      pet
        ? send(res, 200, pet, DEPRECATION)
        : send(res, 404, { code: 'NOT_FOUND', message: `No pet has id ${idMatch[1]}.`, status: 404 }, DEPRECATION),
    );
  }
  if (path === '/trpc/pets.list' && isGet) {
    const raw = url.searchParams.get('input');
    const input = (raw ? JSON.parse(raw) : {}) as { limit?: unknown; status?: unknown };
    const pets = list(input.limit, input.status);
    return typeof pets === 'string'
      ? send(res, 400, { error: { message: pets, code: -32600, data: { code: 'BAD_REQUEST', httpStatus: 400 } } })
      : when(pets, (rows) => send(res, 200, { result: { data: rows } }));
  }
  if (path === '/trpc/pets.create' && req.method === 'POST') {
    const pet = create(await readBody(req));
    return typeof pet === 'string'
      ? send(res, 400, { error: { message: pet, code: -32600, data: { code: 'BAD_REQUEST', httpStatus: 400 } } })
      : when(pet, (row) => send(res, 200, { result: { data: row } }));
  }
  return fail(res, 404, 'NOT_FOUND', `No such resource: ${req.method} ${path}`);
}

const server = createServer((req, res) => {
  handle(req, res).catch(() => fail(res, 500, 'INTERNAL_SERVER_ERROR', 'Internal server error'));
});
server.listen(port, '127.0.0.1');
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
