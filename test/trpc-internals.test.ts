// src/api/trpc-internals.ts runs a procedure's middleware chain itself (`call`), for speed. These
// tests run the same calls through it and through tRPC's own `callTRPCProcedure`, and require the
// same outcome: what every middleware saw (options, context, input), the data, or the error with
// its shape. A probe router exercises every way a middleware can use `next`; the service's own
// router runs its real procedures on a real SQLite file.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callTRPCProcedure, initTRPC, TRPCError, type AnyTRPCRouter } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Context } from '../src/api/trpc.js';
import { appRouter } from '../src/api/root-router.js';
import { trpcInternals, TrpcInternalsError } from '../src/api/trpc-internals.js';
import { parseConfig } from '../src/config.js';
import { migrateDatabase, openDatabase, type Database } from '../src/db/database.js';
import { createIdempotencyStore } from '../src/idempotency/idempotency-store.js';
import { createPetRepository } from '../src/db/sql.js';
import { keyRefusal, knownCaller, refusedCaller } from '../src/api/refusals.js';
import type { ApiKeyIdentity } from '../src/domain/api-key-shape.js';
import { StorageHealth } from '../src/db/storage-health.js';

type Outcome = { data: unknown } | { error: { code: string; message: string; cause: string | undefined; shape: unknown } };

/** A call's outcome, in a form two paths can be compared by. */
async function outcomeOf(router: AnyTRPCRouter, call: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { data: await call() };
  } catch (error) {
    expect(error).toBeInstanceOf(TRPCError);
    const trpcError = error as TRPCError;
    const shape = trpcInternals(router).errorShape({ error: trpcError, type: 'query', path: 'p', input: undefined, ctx: undefined });
    return { error: { code: trpcError.code, message: trpcError.message, cause: trpcError.cause?.constructor.name, shape } };
  }
}

interface CallSpec {
  path: string;
  type: 'query' | 'mutation';
  input: unknown;
}

/** The same call through tRPC's own path and through ours, each with a fresh context from `makeCtx`. */
async function bothWays<C>(router: AnyTRPCRouter, makeCtx: () => C, { path, type, input }: CallSpec) {
  const getRawInput = async () => structuredClone(input);
  const theirCtx = makeCtx();
  const theirs = await outcomeOf(router, () =>
    callTRPCProcedure({ router, path, type, ctx: theirCtx, getRawInput, signal: undefined, batchIndex: 0 }),
  );
  const ourCtx = makeCtx();
  const ours = await outcomeOf(router, () => trpcInternals<C>(router).call({ path, type, ctx: ourCtx, getRawInput }));
  return { theirs, ours, theirCtx, ourCtx };
}

describe("the middleware chain, against tRPC's own", () => {
  // Every middleware writes what it saw into the context's log.
  type ProbeContext = { log: unknown[]; user?: string };
  const t = initTRPC.context<ProbeContext>().create({ isDev: false });
  const seen = (
    label: string,
    opts: { ctx: ProbeContext; input: unknown; type: string; path: string; meta: unknown; [k: string]: unknown },
  ) =>
    opts.ctx.log.push({
      label,
      keys: Object.keys(opts).sort(),
      ctx: Object.keys(opts.ctx).sort(),
      user: opts.ctx.user,
      input: opts.input,
      type: opts.type,
      path: opts.path,
      meta: opts.meta,
    });
  const recorded = t.procedure.use(async (opts) => {
    seen('first', opts);
    return opts.next({ ctx: { user: 'ann' } });
  });
  const probeRouter = t.router({
    plain: recorded
      .meta({ note: 'plain' })
      .input(z.object({ n: z.number().int() }))
      .use(async (opts) => {
        seen('after input', opts);
        return opts.next();
      })
      .output(z.object({ doubled: z.number() }))
      .query(({ ctx, input }) => {
        ctx.log.push({ label: 'resolver', user: ctx.user, input });
        return { doubled: input.n * 2 };
      }),
    replacesInput: recorded
      .use(async (opts) => {
        seen('replacing input', opts);
        return opts.next({ input: { replaced: true } });
      })
      .use(async (opts) => {
        seen('replacing raw input', opts);
        return opts.next({ getRawInput: async () => ({ n: 21 }) });
      })
      .input(z.object({ n: z.number() }))
      .mutation(({ input }) => input),
    throws: recorded
      .use(async () => {
        throw new TRPCError({ code: 'FORBIDDEN', message: 'no' });
      })
      .query(() => 'never'),
    returnsError: recorded
      .use(async (opts) => {
        const result = await opts.next();
        seen(`returned ok=${result.ok}`, opts);
        return result;
      })
      .query(() => {
        throw new Error('boom');
      }),
    badOutput: recorded.output(z.string()).query(() => 42 as unknown as string),
    // The output schema's answer, not the resolver's, is the data: unknown keys dropped, a transform applied.
    shapesOutput: recorded
      .output(z.object({ kept: z.number() }).transform((value) => ({ ...value, shaped: true })))
      .query(() => ({ kept: 1, dropped: 2 })),
    // A failed resolver's error passes the output schema untouched.
    outputAfterError: recorded.output(z.string()).query(() => {
      throw new TRPCError({ code: 'CONFLICT', message: 'taken' });
    }),
    noNext: recorded.use(async () => undefined as never).query(() => 'never'),
  });

  const calls: Array<[string, CallSpec]> = [
    ['a query with middleware before and after input', { path: 'plain', type: 'query', input: { n: 4 } }],
    ['input that fails its schema', { path: 'plain', type: 'query', input: { n: 1.5 } }],
    ['a missing input', { path: 'plain', type: 'query', input: undefined }],
    ['next({ input, getRawInput })', { path: 'replacesInput', type: 'mutation', input: { n: 1 } }],
    ['a middleware that throws', { path: 'throws', type: 'query', input: undefined }],
    ['a resolver that throws, seen by the middleware', { path: 'returnsError', type: 'query', input: undefined }],
    ['output that fails its schema', { path: 'badOutput', type: 'query', input: undefined }],
    ['output shaped by its schema', { path: 'shapesOutput', type: 'query', input: undefined }],
    ['an error through an output schema', { path: 'outputAfterError', type: 'query', input: undefined }],
    ['a middleware that returns nothing', { path: 'noNext', type: 'query', input: undefined }],
    ['no such procedure', { path: 'nothing', type: 'query', input: undefined }],
    ['a procedure of another type', { path: 'plain', type: 'mutation', input: { n: 4 } }],
  ];

  it.each(calls)('%s', async (_name, spec) => {
    const { theirs, ours, theirCtx, ourCtx } = await bothWays<ProbeContext>(probeRouter, () => ({ log: [] }), spec);
    expect(ours).toEqual(theirs);
    expect(ourCtx.log).toEqual(theirCtx.log);
  });

  it('the probe router reaches every branch (a chain that records nothing would pass the comparison)', async () => {
    const { theirCtx, theirs } = await bothWays<ProbeContext>(probeRouter, () => ({ log: [] }), calls[0]![1]);
    expect(theirs).toEqual({ data: { doubled: 8 } });
    expect(theirCtx.log.map((entry) => (entry as { label: string }).label)).toEqual(['first', 'after input', 'resolver']);
    expect(theirCtx.log[1]).toMatchObject({ user: 'ann', input: { n: 4 } });
  });

  it('the output cases reach what they name (the comparison alone would pass on two wrong paths)', async () => {
    const answers = await Promise.all(
      (['shapesOutput', 'outputAfterError', 'badOutput'] as const).map(
        async (path) => (await bothWays<ProbeContext>(probeRouter, () => ({ log: [] }), { path, type: 'query', input: undefined })).ours,
      ),
    );
    expect(answers[0]).toEqual({ data: { kept: 1, shaped: true } });
    expect(answers[1]).toMatchObject({ error: { code: 'CONFLICT' } });
    expect(answers[2]).toMatchObject({ error: { code: 'INTERNAL_SERVER_ERROR', message: 'Output validation failed' } });
  });

  it('refuses a router whose procedures load lazily', () => {
    const lazyRouter = t.router({ later: { load: async () => t.router({}) } as never });
    expect(() => trpcInternals(lazyRouter)).toThrow(TrpcInternalsError);
  });
});

describe("the service's procedures, against tRPC's own path, on SQLite", () => {
  let directory: string;
  let database: Database;
  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'trpc-internals-'));
    const url = `file:${join(directory, 'pets.sqlite')}`;
    await migrateDatabase(url);
    database = await openDatabase(parseConfig({ DATABASE_URL: url }));
    const pets = createPetRepository(database.sql);
    for (const name of ['Rex', 'Tom', 'Kit']) await pets.create({ name, categoryId: 1, status: 'available' });
  });
  afterAll(async () => {
    await database.close();
    rmSync(directory, { recursive: true, force: true });
  });

  function serviceContext(identity: ApiKeyIdentity | null): () => Context & { headers: Record<string, string> } {
    return () => {
      const headers: Record<string, string> = {};
      return {
        caller: identity === null ? refusedCaller(keyRefusal(false)) : knownCaller(identity),
        budget: null,
        idempotencyKeyHeader: undefined,
        keyRateLimiter: null,
        storage: new StorageHealth(),
        pets: createPetRepository(database.sql),
        idempotency: createIdempotencyStore(database.sql, 60_000),
        reply: headers,
        writer: {
          refused: (_reply, refusal) => void (headers.refused = refusal.reason),
          rateLimit: (_reply, decision) => void (headers.ratelimit = JSON.stringify(decision)),
          replayed: () => void (headers['idempotent-replayed'] = 'true'),
        },
        nextPage: (_reply, next) => void (headers.link = JSON.stringify(next)),
        headers,
      };
    };
  }

  const caller = { keyId: 'key-1' };
  const calls: Array<[string, CallSpec, ApiKeyIdentity | null]> = [
    ['list', { path: 'pets.list', type: 'query', input: { limit: 2 } }, caller],
    ['list with a bad limit', { path: 'pets.list', type: 'query', input: { limit: 0 } }, caller],
    ['get', { path: 'pets.get', type: 'query', input: { petId: 2 } }, caller],
    ['get of a missing pet', { path: 'pets.get', type: 'query', input: { petId: 99 } }, caller],
    ['get without a key', { path: 'pets.get', type: 'query', input: { petId: 2 } }, null],
    ['create with a bad body', { path: 'pets.create', type: 'mutation', input: { name: '' } }, caller],
  ];

  it.each(calls)('%s', async (_name, spec, identity) => {
    const { theirs, ours, theirCtx, ourCtx } = await bothWays(appRouter, serviceContext(identity), spec);
    expect(ours).toEqual(theirs);
    expect(ourCtx.headers).toEqual(theirCtx.headers);
  });
});
