// A full disk: the service runs as a real process whose file size limit (RLIMIT_FSIZE,
// `ulimit -f`: no root needed) sits just above its SQLite file, so its writes start failing the way
// they do on a full disk. No create may be acknowledged unless its row is committed: every answer
// is 201 or 503 with Retry-After (each kind of create refused at least once), reads keep working
// (with a stored key too, whose last_used_at bookkeeping is due and cannot be written: logged, never
// the request's failure), /readyz says so, and once there is room again (the limit raised on the
// running process) the same process writes again by itself. After a restart on the same file, the
// API lists every acknowledged pet under its id, with its name, and no two acknowledgements share an id.
import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { promisify } from 'node:util';
import Sqlite from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiKeyStore } from '../../src/auth/api-key-store.js';
import { parseConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { sqliteFilePath } from '../../src/db/providers.js';
import { FROM_SOURCE, startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { createMigratedTestDatabase, type TestDatabase } from '../support/test-database.js';

const run = promisify(execFile);
const ENV_KEY = 'disk-full-key-0123456789';
/** Room for a few dozen commits in the WAL file beyond the database's size, then no more. */
const ROOM_BYTES = 160 * 1024;

let service: ServiceProcess | undefined;
let database: TestDatabase | undefined;
afterEach(async () => {
  await service?.stop();
  service = undefined;
  await database?.drop();
  database = undefined;
});

interface Answer {
  status: number;
  retryAfter: string | null;
  body: {
    id?: number;
    name?: string;
    code?: string;
    error?: { data?: { code?: string } };
    result?: { data?: { id: number; name: string } };
  };
}

async function call(
  baseUrl: string,
  path: string,
  init: { key: string; body?: unknown; headers?: Record<string, string> },
): Promise<Answer> {
  const response = await fetch(baseUrl + path, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${init.key}`, 'content-type': 'application/json', ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: AbortSignal.timeout(20_000),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as Answer['body'] };
}

/** Every pet, through the API: pages of 100 in id order (docs/api.md, "Walking the whole inventory"). */
async function listAll(baseUrl: string, key: string): Promise<Array<{ id: number; name: string }>> {
  const all: Array<{ id: number; name: string }> = [];
  for (let after = 0; ;) {
    const response = await fetch(`${baseUrl}/v1/pets?limit=100${after ? `&after=${after}` : ''}`, {
      headers: { authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(20_000),
    });
    expect(response.status).toBe(200);
    const page = (await response.json()) as Array<{ id: number; name: string }>;
    all.push(...page);
    if (page.length < 100) return all;
    after = page[page.length - 1]!.id;
  }
}

/** Waits until `done()` holds, polling; fails with `message` after 10 s. */
async function waitFor(done: () => boolean, message: string): Promise<void> {
  const until = performance.now() + 10_000;
  while (!done()) {
    if (performance.now() > until) throw new Error(message);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const CREATE_KINDS = ['tRPC', 'idempotent', 'stored key', 'plain'] as const;
type CreateKind = (typeof CREATE_KINDS)[number];

/** Runs `count` calls, `inFlight` at a time. */
async function storm<T>(count: number, inFlight: number, one: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) results.push(await one(next++));
    }),
  );
  return results;
}

describe('SQLite on a full disk', () => {
  it('acknowledges no create it did not store, keeps serving reads, reports it, and recovers by itself', { timeout: 120_000 }, async () => {
    database = await createMigratedTestDatabase('sqlite');
    const setup = await openDatabase(parseConfig({ DATABASE_URL: database.url }));
    const keys = createApiKeyStore(setup.prisma);
    const { key: storedKey } = await keys.create('disk-full');
    // More stored keys, first used once the disk is full, their last use noted long ago: each
    // one's bookkeeping write (last_used_at, at most once a minute) is due on its first request.
    // Three, because a full WAL file may still have room for one page (an UPDATE of one row) where
    // a create, which writes several, no longer fits: the first write may squeeze in, not all three.
    const dueKeys = await Promise.all([1, 2, 3].map((n) => keys.create(`bookkeeping-due-${n}`)));
    await setup.close(); // checkpoints the WAL into the file: its size is the database's
    const file = sqliteFilePath(database.url);
    const direct = new Sqlite(file);
    const longAgo = new Date(Date.now() - 10 * 60_000).toISOString();
    for (const { record } of dueKeys) direct.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?').run(longAgo, record.id);
    direct.close(); // the last connection: the WAL is checkpointed into the file again
    const limitKiB = Math.ceil((statSync(file).size + ROOM_BYTES) / 1024);

    // The soft limit only, so that it can be raised again on the running process.
    const [node, ...args] = FROM_SOURCE;
    service = await startServiceProcess(
      { DATABASE_URL: database.url, API_KEYS: ENV_KEY, LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '0' },
      { command: ['bash', '-c', `ulimit -S -f ${limitKiB} && exec "$@"`, 'bash', node, ...args] },
    );
    const { baseUrl } = service;

    // Plain creates on both surfaces, idempotent creates, creates with a stored key: far more than fit.
    const acknowledged: Array<{ id: number; name: string }> = [];
    const answers: Array<Answer & { kind: CreateKind }> = [];
    const note = (kind: CreateKind, answer: Answer, pet: { id: number; name: string } | undefined) => {
      answers.push({ ...answer, kind });
      if (pet) acknowledged.push({ id: pet.id, name: pet.name });
    };
    await storm(400, 8, async (i) => {
      const name = `pet-${i}`;
      const kind = CREATE_KINDS[i % 4]!;
      if (kind === 'tRPC') {
        const answer = await call(baseUrl, '/trpc/pets.create', { key: ENV_KEY, body: { name, categoryId: 1 } });
        note(kind, answer, answer.status === 200 ? answer.body.result!.data : undefined);
        return;
      }
      const headers: Record<string, string> = kind === 'idempotent' ? { 'idempotency-key': `create-${i}` } : {};
      const answer = await call(baseUrl, '/v1/pets', {
        key: kind === 'stored key' ? storedKey : ENV_KEY,
        body: { name, categoryId: 1 },
        headers,
      });
      note(kind, answer, answer.status === 201 ? (answer.body as { id: number; name: string }) : undefined);
    });

    const refused = answers.filter((answer) => answer.status !== 201 && answer.status !== 200);
    // Every kind of create met the full disk: each was refused at least once.
    for (const kind of CREATE_KINDS) {
      expect(
        refused.filter((answer) => answer.kind === kind).length,
        `no ${kind} create was refused: the disk never filled up`,
      ).toBeGreaterThan(0);
    }
    expect(acknowledged.length, 'nothing was stored before the disk filled up').toBeGreaterThan(0);
    for (const answer of refused) {
      expect(answer.status).toBe(503);
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(answer.body.code ?? answer.body.error?.data?.code).toBe('SERVICE_UNAVAILABLE');
    }
    expect(new Set(acknowledged.map((pet) => pet.id)).size).toBe(acknowledged.length);

    // Reads are served, with either key; readiness says why writes fail.
    expect((await call(baseUrl, '/v1/pets?limit=5', { key: storedKey })).status).toBe(200);
    expect((await call(baseUrl, '/v1/pets?limit=5', { key: ENV_KEY })).status).toBe(200);

    // The due keys' first requests, with nothing writable: their last_used_at writes fail beside
    // them (logged as a warning), and they get their normal answers on both surfaces.
    const bookkeepingWarnings = () =>
      service!.logs.filter((entry) => entry.level === 40 && /could not note the use of an API key/.test(String(entry.msg))).length;
    const warningsBefore = bookkeepingWarnings();
    for (const { key: dueKey } of dueKeys) {
      expect((await call(baseUrl, '/v1/pets?limit=5', { key: dueKey })).status).toBe(200);
      expect((await call(baseUrl, '/trpc/pets.list?input=%7B%22limit%22%3A5%7D', { key: dueKey })).status).toBe(200);
    }
    await waitFor(() => bookkeepingWarnings() > warningsBefore, 'the failed last_used_at write was never logged');
    const ready = await fetch(`${baseUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { message: string }).message).toMatch(/no space left/);

    // Room again: the same process stores the next create, and is ready again.
    await run('prlimit', [`--pid=${service.child.pid}`, '--fsize=unlimited']);
    const after = await call(baseUrl, '/v1/pets', { key: storedKey, body: { name: 'after', categoryId: 2 } });
    expect(after.status).toBe(201);
    acknowledged.push({ id: after.body.id!, name: after.body.name! });
    expect((await fetch(`${baseUrl}/readyz`)).status).toBe(200);

    expect(await service.stop()).toBe(0);
    service = undefined;

    // Restarted on the same file, with room: the API lists exactly the acknowledged pets, under their ids.
    service = await startServiceProcess({ DATABASE_URL: database.url, API_KEYS: ENV_KEY, LOG_LEVEL: 'info' });
    const stored = await listAll(service.baseUrl, storedKey);
    expect(stored.map(({ id, name }) => ({ id, name }))).toEqual([...acknowledged].sort((a, b) => a.id - b.id));
  });
});
