// Every use of tRPC's internals (the router's `_def`, error shaping, status mapping, the transformer),
// for the two surfaces that answer without tRPC's Fetch handler. No other file touches `_def`.
// `trpcInternals(router)` checks at start-up that they still look as used here.
// @see docs/architecture.md "Where we depart from a library, and why"
import { getTRPCErrorFromUnknown, getTRPCErrorShape, transformTRPCResponse, TRPCError, type AnyTRPCRouter } from '@trpc/server';
import { getHTTPStatusCode } from '@trpc/server/http';
import { defaultTransformer, getParseFn, middlewareMarker } from '@trpc/server/unstable-core-do-not-import';
import type { z } from 'zod';
import { PRECOMPILED_OUTPUT_CHECKS } from '../domain/pet-schemas.js';
import type { ApiMeta } from './meta.js';

type ProcedureType = 'query' | 'mutation' | 'subscription';

/** One procedure of the router, as the surfaces need it. */
export interface ProcedureInfo {
  path: string;
  type: ProcedureType;
  meta: ApiMeta;
  /** The schemas given to `.input()`, in order. */
  inputs: readonly unknown[];
}

/** One call's answer, before transformation: tRPC's response item. */
export type TrpcResponseItem = { result: { data: unknown } } | { error: Record<string, unknown> & { data?: Record<string, unknown> } };

interface CallOptions<TContext> {
  path: string;
  type: 'query' | 'mutation';
  ctx: TContext;
  /** Reads the call's raw input (deserialized); called after the middleware that runs before input. */
  getRawInput: () => Promise<unknown>;
}

interface ErrorShapeOptions<TContext> {
  error: TRPCError;
  type: ProcedureType | 'unknown';
  path: string | undefined;
  input: unknown;
  ctx: TContext | undefined;
}

export class TrpcInternalsError extends Error {
  override name = 'TrpcInternalsError';
}

interface RouterInternals {
  procedures: Record<
    string,
    { _def?: { type?: unknown; meta?: unknown; inputs?: unknown; output?: unknown; procedure?: unknown; middlewares?: unknown } }
  >;
  _config: { transformer?: { input?: { deserialize?: unknown }; output?: { serialize?: unknown } } };
  lazy?: Record<string, unknown>;
}

/** What one of a procedure's middleware (tRPC's own, ours, its resolver) gets and gives. */
interface MiddlewareOptions<TContext> {
  ctx: TContext;
  input: unknown;
  getRawInput: () => Promise<unknown>;
  [other: string]: unknown;
}
type MiddlewareResult = { ok: true; data: unknown } | { ok: false; error: TRPCError };
type Middleware<TContext> = (
  options: MiddlewareOptions<TContext> & { next: (next?: Partial<MiddlewareOptions<TContext>>) => Promise<MiddlewareResult> },
) => Promise<MiddlewareResult>;
interface ProcedureDef<TContext> {
  type: ProcedureType;
  meta?: ApiMeta;
  inputs: unknown[];
  output?: unknown;
  middlewares: Middleware<TContext>[];
}

/** tRPC marks the middleware that `.output()` adds with this `_type`. */
const OUTPUT_MIDDLEWARE_TYPE = 'output';
const isOutputMiddleware = (middleware: unknown) => (middleware as { _type?: unknown })._type === OUTPUT_MIDDLEWARE_TYPE;

/**
 * The middleware `.output(schema)` adds (tRPC's `createOutputMiddleware`): the same steps and error, the
 * result copied with object spread instead of the transpiler's helper, which copies it twice.
 */
function outputValidator<TContext>(parse: (value: unknown) => unknown, precompiled?: (value: unknown) => boolean): Middleware<TContext> {
  return async ({ next }) => {
    const result = await next();
    if (!result.ok) return result;
    // A value the schema's precompiled check accepts is what the schema would return: passed as is.
    if (precompiled?.(result.data)) return result;
    let data: unknown;
    try {
      data = await parse(result.data);
    } catch (cause) {
      throw new TRPCError({ message: 'Output validation failed', code: 'INTERNAL_SERVER_ERROR', cause });
    }
    return { ...result, data };
  };
}

/** A procedure's chain with the middleware `.output()` adds (tRPC refuses a second) swapped for `outputValidator`. */
function fastChain<TContext>(def: ProcedureDef<TContext>): Middleware<TContext>[] {
  if (def.output === undefined) return def.middlewares;
  const parse = getParseFn(def.output as Parameters<typeof getParseFn>[0]) as (value: unknown) => unknown;
  const precompiled = PRECOMPILED_OUTPUT_CHECKS.get(def.output as z.ZodType);
  return def.middlewares.map((middleware) => (isOutputMiddleware(middleware) ? outputValidator<TContext>(parse, precompiled) : middleware));
}

/**
 * A procedure's middleware chain run as tRPC's `callRecursive` runs it, with object spread where tRPC's
 * build copies the options property by property at every step. test/trpc-internals.test.ts compares them.
 */
async function runMiddlewares<TContext>(
  def: ProcedureDef<TContext>,
  index: number,
  options: MiddlewareOptions<TContext>,
  ctx: TContext,
  input: unknown,
  getRawInput: () => Promise<unknown>,
): Promise<MiddlewareResult> {
  try {
    // One copy of the options per step: what changes comes as arguments.
    return await def.middlewares[index]!({
      ...options,
      ctx,
      input,
      getRawInput,
      meta: def.meta,
      next: (next) =>
        runMiddlewares(
          def,
          index + 1,
          options,
          next?.ctx ? { ...ctx, ...next.ctx } : ctx,
          next && 'input' in next ? next.input : input,
          next?.getRawInput ?? getRawInput,
        ),
    });
  } catch (cause) {
    return { ok: false, error: getTRPCErrorFromUnknown(cause), marker: middlewareMarker } as MiddlewareResult;
  }
}

function fail(what: string): never {
  throw new TrpcInternalsError(
    `tRPC's internals changed (${what}); src/api/trpc-internals.ts needs updating for this @trpc/server version.`,
  );
}

/** Checks the router's internals and returns them typed; throws TrpcInternalsError otherwise. */
function checkedDef(router: AnyTRPCRouter): RouterInternals {
  const def = (router as unknown as { _def?: Partial<RouterInternals> })._def;
  if (!def || typeof def.procedures !== 'object' || def.procedures === null) fail('router._def.procedures is missing');
  // Lazy routers load procedures on first call; the procedure table here would miss them.
  if (def.lazy && Object.keys(def.lazy).length > 0) fail('router._def.lazy is not empty');
  const transformer = def._config?.transformer;
  if (typeof transformer?.input?.deserialize !== 'function' || typeof transformer.output?.serialize !== 'function') {
    fail('router._def._config.transformer is not { input.deserialize, output.serialize }');
  }
  for (const [path, procedure] of Object.entries(def.procedures)) {
    const procedureDef = procedure?._def;
    if (!procedureDef?.procedure || !['query', 'mutation', 'subscription'].includes(procedureDef.type as string)) {
      fail(`procedure ${path} has no _def.type`);
    }
    if (!Array.isArray(procedureDef.inputs)) fail(`procedure ${path} has no _def.inputs`);
    const middlewares = procedureDef.middlewares;
    if (!Array.isArray(middlewares) || middlewares.length === 0 || !middlewares.every((m) => typeof m === 'function')) {
      fail(`procedure ${path} has no _def.middlewares`);
    }
    // An output schema's middleware is the one fastChain swaps: it must still carry its mark.
    if (procedureDef.output !== undefined && middlewares.filter(isOutputMiddleware).length !== 1) {
      fail(`procedure ${path} has an output schema but not one middleware marked _type "${OUTPUT_MIDDLEWARE_TYPE}"`);
    }
    // The chain ends with the resolver; the input and output parsers sit before it.
    if ((middlewares.at(-1) as { name?: string }).name !== 'resolveMiddleware')
      fail(`procedure ${path}'s last middleware is not its resolver`);
  }
  if (middlewareMarker !== 'middlewareMarker') fail('middlewareMarker changed');
  for (const [name, fn] of Object.entries({ getTRPCErrorShape, transformTRPCResponse, getHTTPStatusCode, getParseFn })) {
    if (typeof fn !== 'function') fail(`${name} is no longer exported`);
  }
  return def as RouterInternals;
}

const built = new WeakMap<AnyTRPCRouter, unknown>();

/** The internals of `router`, checked the first time (at start-up, when a surface registers) and kept. */
export function trpcInternals<TContext>(router: AnyTRPCRouter): TrpcInternals<TContext> {
  let internals = built.get(router) as TrpcInternals<TContext> | undefined;
  if (!internals) built.set(router, (internals = buildInternals<TContext>(router)));
  return internals;
}

function buildInternals<TContext>(router: AnyTRPCRouter) {
  const def = checkedDef(router);
  // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- AnyTRPCRouter types its config with `any`; typed here as tRPC's functions take it
  const config: Parameters<typeof transformTRPCResponse>[0] = router._def._config;
  const identityTransformer = config.transformer === defaultTransformer;
  const defs = new Map(
    Object.entries(def.procedures).map(([path, procedure]) => {
      const procedureDef = procedure._def as ProcedureDef<TContext>;
      return [path, { ...procedureDef, middlewares: fastChain(procedureDef) }];
    }),
  );
  const procedures = new Map<string, ProcedureInfo>(
    [...defs].map(([path, procedureDef]) => [
      path,
      { path, type: procedureDef.type, meta: procedureDef.meta ?? {}, inputs: procedureDef.inputs },
    ]),
  );

  const errorShape = (options: ErrorShapeOptions<TContext>) =>
    getTRPCErrorShape({ config, ...options }) as Record<string, unknown> & { data: Record<string, unknown> };

  // The shape tRPC gives an error must still be { message, code: number, data: { code, httpStatus } }.
  const probe = errorShape({
    error: new TRPCError({ code: 'NOT_FOUND' }),
    type: 'unknown',
    path: undefined,
    input: undefined,
    ctx: undefined,
  });
  if (typeof probe.code !== 'number' || probe.data?.code !== 'NOT_FOUND' || probe.data.httpStatus !== 404) fail('the error shape');

  return {
    procedures: procedures as ReadonlyMap<string, ProcedureInfo>,

    /** Runs a procedure as tRPC's `callTRPCProcedure` does; resolves with the data or rejects with the TRPCError. */
    async call({ path, type, ctx, getRawInput }: CallOptions<TContext>): Promise<unknown> {
      const procedureDef = defs.get(path);
      if (!procedureDef || procedureDef.type !== type)
        throw new TRPCError({ code: 'NOT_FOUND', message: `No "${type}"-procedure on path "${path}"` });
      const options = { router, path, type, ctx, getRawInput, signal: undefined, batchIndex: 0, input: undefined };
      const result = await runMiddlewares(procedureDef, 0, options, ctx, undefined, getRawInput);
      if (!result)
        throw new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: 'No result from middlewares - did you forget to `return next()`?' });
      if (!result.ok) throw result.error;
      return result.data;
    },

    /** Raw JSON input through the router's transformer (identity here: no transformer is set). */
    deserializeInput: (value: unknown): unknown => config.transformer.input.deserialize(value),

    /** Whatever a procedure threw, as a TRPCError. */
    toTRPCError: (cause: unknown): TRPCError => getTRPCErrorFromUnknown(cause),

    /** An error's shape as the router's errorFormatter makes it (src/api/errors.ts, formatTrpcError). */
    errorShape,

    /** The HTTP status of a response or a batch (207 when they differ), as tRPC computes it. */
    statusOfResponses: (items: TrpcResponseItem[], errors: TRPCError[]): number => getHTTPStatusCode(items as never, errors),

    /** The JSON text of a response body (one item, or an array for a batch), through the transformer. */
    serializeResponse: (body: TrpcResponseItem | TrpcResponseItem[]): string =>
      // tRPC's default transformer is the identity: its copy of the body would change nothing.
      JSON.stringify(identityTransformer ? body : transformTRPCResponse(config, body as never)),
  };
}

export type TrpcInternals<TContext> = ReturnType<typeof buildInternals<TContext>>;
