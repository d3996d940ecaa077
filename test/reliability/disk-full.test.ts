// A full disk (issue 12.1): the service runs as a real process whose file size limit (RLIMIT_FSIZE,
// `ulimit -f`: no root needed) sits just above its SQLite file, so its writes start failing the way
// they do on a full disk. No create may be acknowledged unless its row is committed: every answer
// is 201 or 503 with Retry-After, reads keep working (with a stored key too, whose last_used_at
// bookkeeping cannot be written), /readyz says so, and once there is room again (the limit raised
// on the running process) the same process writes again by itself. After a restart, every
// acknowledged id is stored, with its name, and no two acknowledgements share an id.
import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { promisify } from 'node:util';
import Sqlite from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiKeyStore } from '../../src/auth/api-key-store.js';
import { parseConfig } from '../../src/config.js';
import { migrateDatabase, openDatabase } from '../../src/db/database.js';
import { sqliteFilePath } from '../../src/db/providers.js';
import { FROM_SOURCE, startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

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
    database = await createTestDatabase('sqlite');
    await migrateDatabase(database.url);
    const setup = await openDatabase(parseConfig({ DATABASE_URL: database.url }));
    const { key: storedKey } = await createApiKeyStore(setup.prisma).create('disk-full');
    await setup.close(); // checkpoints the WAL into the file: its size is the database's
    const file = sqliteFilePath(database.url);
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
    const answers: Answer[] = [];
    const note = (answer: Answer, pet: { id: number; name: string } | undefined) => {
      answers.push(answer);
      if (pet) acknowledged.push({ id: pet.id, name: pet.name });
    };
    await storm(400, 8, async (i) => {
      const name = `pet-${i}`;
      if (i % 4 === 0) {
        const answer = await call(baseUrl, '/trpc/pets.create', { key: ENV_KEY, body: { name, categoryId: 1 } });
        note(answer, answer.status === 200 ? answer.body.result!.data : undefined);
        return;
      }
      const headers: Record<string, string> = i % 4 === 1 ? { 'idempotency-key': `create-${i}` } : {};
      const answer = await call(baseUrl, '/v1/pets', { key: i % 4 === 2 ? storedKey : ENV_KEY, body: { name, categoryId: 1 }, headers });
      note(answer, answer.status === 201 ? (answer.body as { id: number; name: string }) : undefined);
    });

    const refused = answers.filter((answer) => answer.status !== 201 && answer.status !== 200);
    expect(refused.length, 'the disk never filled up').toBeGreaterThan(0);
    expect(acknowledged.length, 'nothing was stored before the disk filled up').toBeGreaterThan(0);
    for (const answer of refused) {
      expect(answer.status).toBe(503);
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(answer.body.code ?? answer.body.error?.data?.code).toBe('SERVICE_UNAVAILABLE');
    }
    // Idempotent creates were refused the same way (not 500), and some of each kind got through or not: all 503.
    expect(new Set(acknowledged.map((pet) => pet.id)).size).toBe(acknowledged.length);

    // Reads are served, with either key; readiness says why writes fail.
    expect((await call(baseUrl, '/v1/pets?limit=5', { key: storedKey })).status).toBe(200);
    expect((await call(baseUrl, '/v1/pets?limit=5', { key: ENV_KEY })).status).toBe(200);
    const ready = await fetch(`${baseUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { message: string }).message).toMatch(/no space left/);

    // Room again: the same process stores the next create, and is ready again.
    await run('prlimit', [`--pid=${service.child.pid}`, '--fsize=unlimited']);
    const after = await call(baseUrl, '/v1/pets', { key: storedKey, body: { name: 'after', categoryId: 2 } });
    expect(after.status).toBe(201);
    note(after, after.body as { id: number; name: string });
    expect((await fetch(`${baseUrl}/readyz`)).status).toBe(200);

    expect(await service.stop()).toBe(0);
    service = undefined;

    // Restarted (here: the file read directly): exactly the acknowledged pets, under their ids.
    const reopened = new Sqlite(file, { readonly: true });
    try {
      const stored = reopened.prepare('SELECT id, name FROM pets ORDER BY id').all() as Array<{ id: number; name: string }>;
      expect(stored).toEqual([...acknowledged].sort((a, b) => a.id - b.id));
    } finally {
      reopened.close();
    }
  });
});
