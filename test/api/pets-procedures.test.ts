// The pet procedures' behaviour, called in-process through tRPC's caller (createCallerFactory) with the
// context both surfaces make (contextFactory), both from src/api/trpc.ts, on a real SQLite file:
// the same middleware, validation, errors and data access as over HTTP, without a socket. What the
// wire looks like (statuses, headers, envelopes, tRPC's shape) stays in the HTTP suites.
import { TRPCError } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyRefusal, knownCaller, lockedOutRefusal, refusedCaller, type Refusal } from '../../src/api/refusals.js';
import { appRouter } from '../../src/api/root-router.js';
import { contextFactory, createCallerFactory, type AnswerWriter, type NextPageInput } from '../../src/api/trpc.js';
import { parseConfig } from '../../src/config.js';
import { migrateDatabase, openDatabase, type Database } from '../../src/db/database.js';
import { createPetRepository } from '../../src/db/sql.js';
import { StorageHealth } from '../../src/db/storage-health.js';
import type { ApiKeyIdentity } from '../../src/domain/api-key-shape.js';
import { DomainError } from '../../src/domain/domain-errors.js';
import { createIdempotencyStore, KEY_REUSED_MESSAGE } from '../../src/idempotency/idempotency-store.js';
import { FixedWindowLimiter, type LimitDecision, type Limiter } from '../../src/limits/fixed-window-limiter.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** What a surface would have written on its answer: the facts a procedure reported. */
interface Answer {
  refusals: Refusal['reason'][];
  decisions: LimitDecision[];
  replayed: boolean;
  nextPage: NextPageInput | undefined;
}

const writer: AnswerWriter<Answer> = {
  refused: (answer, refusal) => void answer.refusals.push(refusal.reason),
  rateLimit: (answer, decision) => void answer.decisions.push(decision),
  replayed: (answer) => void (answer.replayed = true),
};

const KEY: ApiKeyIdentity = { keyId: 'key-a' };
const OTHER_KEY: ApiKeyIdentity = { keyId: 'key-b' };

const createCaller = createCallerFactory(appRouter);
let testDatabase: TestDatabase;
let database: Database;

beforeAll(async () => {
  testDatabase = await createTestDatabase();
  await migrateDatabase(testDatabase.url);
  database = await openDatabase(parseConfig({ DATABASE_URL: testDatabase.url }));
});
afterAll(async () => {
  await database?.close();
  await testDatabase?.drop();
});

interface CallerOptions {
  identity?: ApiKeyIdentity | null;
  refusal?: Refusal;
  headers?: Record<string, string>;
  limiter?: Limiter | null;
  budget?: LimitDecision | null;
}

/** A caller with the context a surface would make for a request with these findings and headers. */
function callerWith({ identity = KEY, refusal, headers = {}, limiter = null, budget = null }: CallerOptions = {}) {
  const makeContext = contextFactory(
    {
      pets: createPetRepository(database.sql),
      idempotency: createIdempotencyStore(database.sql, 60_000),
      keyRateLimiter: limiter,
      storage: new StorageHealth(),
    },
    writer,
  );
  const answer: Answer = { refusals: [], decisions: [], replayed: false, nextPage: undefined };
  const caller = identity === null ? refusedCaller(refusal ?? keyRefusal(false)) : knownCaller(identity);
  const request = { call: { caller, budget }, headers };
  const ctx = makeContext(request, answer, (into, input) => void (into.nextPage = input));
  return { caller: createCaller(ctx), answer };
}

/** The TRPCError a call rejects with. */
async function rejection(call: Promise<unknown>): Promise<TRPCError> {
  const error = await call.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(TRPCError);
  return error as TRPCError;
}

describe('pets.list', () => {
  const ids: number[] = [];
  beforeAll(async () => {
    const { caller } = callerWith();
    for (let i = 0; i < 25; i++) {
      ids.push((await caller.pets.create({ name: `Pet ${i}`, categoryId: 1, status: i % 3 === 0 ? 'pending' : 'available' })).id);
    }
  });

  it('returns the first 20 in ascending id order, and says a full page has a next one', async () => {
    const { caller, answer } = callerWith();
    const page = await caller.pets.list({});
    expect(page.map((pet) => pet.id)).toEqual(ids.slice(0, 20));
    expect(answer.nextPage).toEqual({ limit: 20, status: undefined, after: ids[19] });
  });

  it('pages with `after`; a shorter page is the last', async () => {
    const { caller, answer } = callerWith();
    const page = await caller.pets.list({ limit: 20, after: ids[19] });
    expect(page.map((pet) => pet.id)).toEqual(ids.slice(20));
    expect(answer.nextPage).toBeUndefined();
  });

  it('filters by status, the next page keeping the filter', async () => {
    const { caller, answer } = callerWith();
    const page = await caller.pets.list({ status: 'pending', limit: 3 });
    expect(page.every((pet) => pet.status === 'pending')).toBe(true);
    expect(page.map((pet) => pet.id)).toEqual(ids.filter((_, i) => i % 3 === 0).slice(0, 3));
    expect(answer.nextPage).toEqual({ limit: 3, status: 'pending', after: page[2]!.id });
  });

  it.each([[{ limit: 0 }], [{ limit: 101 }], [{ status: 'sold-out' }], [{ after: 0 }]])('refuses %j as BAD_REQUEST', async (input) => {
    const { caller } = callerWith();
    expect((await rejection(caller.pets.list(input as never))).code).toBe('BAD_REQUEST');
  });
});

describe('pets.create', () => {
  it('stores a valid pet, `available` by default, and returns it with its id', async () => {
    const { caller } = callerWith();
    const pet = await caller.pets.create({ name: 'Rex', categoryId: 3 });
    expect(pet).toEqual({ id: expect.any(Number), name: 'Rex', categoryId: 3, status: 'available' });
    expect(await caller.pets.get({ petId: pet.id })).toEqual(pet);
  });

  it.each([
    [{ name: '', categoryId: 1 }],
    [{ name: 'Rex' }],
    [{ name: 'Rex', categoryId: 1, extra: true }],
    [{ name: 'x'.repeat(101), categoryId: 1 }],
  ])('refuses %j as BAD_REQUEST and stores nothing', async (input) => {
    const { caller } = callerWith();
    const before = await caller.pets.list({ limit: 100 });
    expect((await rejection(caller.pets.create(input as never))).code).toBe('BAD_REQUEST');
    expect(await caller.pets.list({ limit: 100 })).toEqual(before);
  });
});

describe('pets.get', () => {
  it('NOT_FOUND for an id no pet has', async () => {
    const { caller } = callerWith();
    const error = await rejection(caller.pets.get({ petId: 9_007_199_254_740_991 }));
    expect(error.code).toBe('NOT_FOUND');
    expect(error.message).toBe('No pet has id 9007199254740991.');
  });
});

describe('Idempotency-Key', () => {
  it('a repeat with the same key and body replays the first answer and creates nothing', async () => {
    const headers = { 'idempotency-key': 'caller-tier-1' };
    const first = callerWith({ headers });
    const created = await first.caller.pets.create({ name: 'Once', categoryId: 1 });
    expect(first.answer.replayed).toBe(false);
    const again = callerWith({ headers });
    expect(await again.caller.pets.create({ name: 'Once', categoryId: 1 })).toEqual(created);
    expect(again.answer.replayed).toBe(true);
    const named = (await again.caller.pets.list({ limit: 100 })).filter((pet) => pet.name === 'Once');
    expect(named).toHaveLength(1);
  });

  it("the store's DomainError for a key reused with another body is UNPROCESSABLE_CONTENT", async () => {
    const headers = { 'idempotency-key': 'caller-tier-2' };
    await callerWith({ headers }).caller.pets.create({ name: 'First', categoryId: 1 });
    const error = await rejection(callerWith({ headers }).caller.pets.create({ name: 'Second', categoryId: 1 }));
    expect(error.code).toBe('UNPROCESSABLE_CONTENT');
    expect(error.message).toBe(KEY_REUSED_MESSAGE);
    expect(error.cause).toBeInstanceOf(DomainError);
  });

  it('keys live in the caller key’s space: another API key with the same Idempotency-Key creates its own', async () => {
    const headers = { 'idempotency-key': 'caller-tier-3' };
    const mine = await callerWith({ headers }).caller.pets.create({ name: 'Mine', categoryId: 1 });
    const theirs = callerWith({ headers, identity: OTHER_KEY });
    expect((await theirs.caller.pets.create({ name: 'Mine', categoryId: 1 })).id).not.toBe(mine.id);
    expect(theirs.answer.replayed).toBe(false);
  });

  it('a malformed key is BAD_REQUEST', async () => {
    const error = await rejection(
      callerWith({ headers: { 'idempotency-key': 'with space' } }).caller.pets.create({ name: 'X', categoryId: 1 }),
    );
    expect(error.code).toBe('BAD_REQUEST');
  });
});

describe('who may call, and how often', () => {
  it('no identity: refused with the reason authentication decided, before the input is looked at', async () => {
    const { caller, answer } = callerWith({ identity: null });
    expect((await rejection(caller.pets.list({ limit: 0 }))).code).toBe('UNAUTHORIZED');
    expect(answer.refusals).toEqual(['missing_key']);
    const locked = callerWith({ identity: null, refusal: lockedOutRefusal(30) });
    expect((await rejection(locked.caller.pets.get({ petId: 1 }))).code).toBe('TOO_MANY_REQUESTS');
    expect(locked.answer.refusals).toEqual(['auth_failures']);
  });

  it('the per-key limit: each call counts, before validation, and past it TOO_MANY_REQUESTS', async () => {
    const limiter = new FixedWindowLimiter(2);
    const first = callerWith({ limiter });
    await first.caller.pets.list({});
    expect(first.answer.decisions).toMatchObject([{ allowed: true, remaining: 1 }]);
    const invalid = callerWith({ limiter });
    expect((await rejection(invalid.caller.pets.list({ limit: 0 }))).code).toBe('BAD_REQUEST');
    const third = callerWith({ limiter });
    expect((await rejection(third.caller.pets.list({}))).code).toBe('TOO_MANY_REQUESTS');
    expect(third.answer.refusals).toEqual(['per_key']);
    // Another key has its own budget.
    await callerWith({ limiter, identity: OTHER_KEY }).caller.pets.list({});
  });

  it('a budget already taken for the whole request (a tRPC batch) is read, not taken again', async () => {
    const limiter = new FixedWindowLimiter(5);
    const budget = limiter.take(KEY.keyId, 3);
    const batch = callerWith({ limiter, budget });
    await batch.caller.pets.list({});
    await batch.caller.pets.list({});
    expect(batch.answer.decisions).toEqual([]);
    expect(limiter.peek(KEY.keyId).remaining).toBe(2);
    const spent = callerWith({ limiter, budget: limiter.take(KEY.keyId, 3) });
    expect((await rejection(spent.caller.pets.list({}))).code).toBe('TOO_MANY_REQUESTS');
  });
});
