// The typed tRPC surface at /trpc, for internal TypeScript apps (`createTRPCClient<AppRouter>`).
// Every answer under /trpc is in tRPC's own format, which tRPC clients decode: procedure errors, and
// also what Fastify or Node refuse before tRPC runs (a body over the limit, a content type with no
// parser, a malformed URL, an unknown path, headers too large), all shaped by src/api/errors.ts.
//
// Each request is classified once, when its head arrives (`classify`), and the classification goes
// with it (`request.trpcKind`): the early refusals, the batch's budget and the way through all read
// it. A request without a valid identity is refused before its body is read, with the reason
// authentication decided, and its connection closed: a single call with the answer tRPC's handler
// would give it, a batch or a stream with one error for the whole request, which tRPC's links give
// to every call. A batch's calls are counted against its key's budget together, once.
//
// Two ways through, one wire format. The common call, one query (GET) or one mutation (POST, JSON),
// alone or as a batch of one (what httpBatchLink sends for a lone call), not streamed, is answered
// here directly with tRPC's own response-building functions (src/api/trpc-internals.ts). Every
// other request (larger batches, `trpc-accept: application/jsonl`, other content types, unknown
// procedures, wrong methods, HEAD) goes to tRPC's Fastify handler unchanged. Why: tRPC's handler
// builds a Fetch `Request` and `Response` per call, most of a small call's time (docs/benchmarks.md).
// test/trpc-wire.test.ts holds both ways to tRPC's stock Fastify plugin, request by request.
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { TRPCError } from '@trpc/server';
import { fastifyRequestHandler, type FastifyHandlerOptions } from '@trpc/server/adapters/fastify';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import type { AppRouter } from '../api/root-router.js';
import type { Context, CreateContext } from '../api/context.js';
import { answerForFastifyError, answerForRefusal, trpcErrorShapes } from '../api/errors.js';
import { batchTooLargeRefusal, keyRateLimitRefusal, keyRefusal, unknownProcedureRefusal, type Refusal } from '../api/refusals.js';
import { trpcInternals, type ProcedureInfo, type TrpcResponseItem } from '../api/trpc-internals.js';
import { bodyText, parseJson, withIntegerRule } from '../domain/json-text.js';
import type { LimitDecision, Limiter } from '../limits/fixed-window-limiter.js';
import type { DatabaseHealth } from '../observability/dependencies.js';
import { prepareRefusal } from './authentication.js';
import { deprecationHeaders } from './deprecation-headers.js';
import { sendTrpcJson, TRPC_JSON_HEADERS, trpcErrorSenders } from './error-senders.js';
import { logFailure } from './failure-log.js';
import { setRateLimitHeaders } from './rate-limit-headers.js';

export const TRPC_PREFIX = '/trpc';

/** The methods tRPC serves (a 405's Allow for those it cannot be handed). */
const TRPC_METHODS = 'GET, POST';

export interface TrpcPluginOptions {
  router: AppRouter;
  createContext: CreateContext<FastifyReply>;
  /** The per-key limit (null: off): a batch's calls are counted together, before its body is read. */
  keyRateLimiter: Limiter | null;
  /** The most calls a batch may name (TRPC_MAX_BATCH_CALLS). */
  maxBatchCalls: number;
  /** Told of calls refused for a database fault (src/observability/dependencies.ts). */
  databaseHealth?: DatabaseHealth;
}

/**
 * What a /trpc request is, decided once when its head arrives (`classify`) and carried on the
 * request to the handler: which calls tRPC would run for it, and whether the direct way may answer it.
 */
interface TrpcRequestKind {
  /** `none`: tRPC answers without running a call (HEAD, no such procedure, a wrong method or content
   * type, a stream that is not a batch); `call`: one call; `batch`: several calls, or a stream. */
  readonly kind: 'none' | 'call' | 'batch';
  readonly batched: boolean;
  /** The one call's procedure (`call`). */
  readonly procedure: ProcedureInfo | undefined;
  /** The direct way may answer it (`call` only; a body that starts with a byte order mark aside). */
  readonly direct: boolean;
  /** Every call is of the type its method runs (GET: queries; POST with JSON: mutations), so each runs. */
  readonly plain: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** What a /trpc request is (src/http/trpc-plugin.ts, classify); null elsewhere. */
    trpcKind: TrpcRequestKind | null;
  }
}

const NO_CALL: TrpcRequestKind = Object.freeze({ kind: 'none', batched: false, procedure: undefined, direct: false, plain: false });

/** A UTF-8 byte order mark, which tRPC's handler drops from a body (decoding it as a Fetch body). */
const BOM = '\uFEFF';

/** The media type of a Content-Type header, as tRPC compares it: lower case, no parameters. */
function mediaType(header: string | undefined): string | undefined {
  return header?.split(';', 1)[0]?.trim().toLowerCase();
}

/** Whether tRPC reads the request as a stream (getAcceptHeader): `trpc-accept`, else jsonl as one of Accept's types. */
function isStreamed(request: FastifyRequest): boolean {
  const trpcAccept = request.headers['trpc-accept'];
  if (trpcAccept !== undefined) return trpcAccept === 'application/jsonl';
  const accept = request.headers.accept;
  return (
    accept !== undefined && accept.includes('application/jsonl') && accept.split(',').some((type) => type.trim() === 'application/jsonl')
  );
}

function decodable(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}
/**
 * tRPC's handler reads the JSON of a request itself (GET: the `input` query parameter of the URL;
 * else the body text): the integer rule (src/domain/json-text.ts) is applied to that text before
 * it is handed over, so that batches and streams read numbers as the direct way does. Nearly
 * always the text is left as it is; the URL is rewritten only when the rule changes a number.
 */
function applyIntegerRule(request: FastifyRequest): void {
  if (request.method !== 'GET') {
    if (typeof request.body === 'string') request.body = withIntegerRule(request.body);
    return;
  }
  const url = request.raw.url ?? '';
  const queryStart = url.indexOf('?');
  if (queryStart === -1) return;
  const query = new URLSearchParams(url.slice(queryStart + 1)); // as tRPC reads it (a URL's searchParams)
  const input = query.get('input');
  if (input === null) return;
  const ruled = withIntegerRule(input);
  if (ruled === input) return;
  query.set('input', ruled);
  request.raw.url = `${url.slice(0, queryStart)}?${query.toString()}`;
}

/** Whether a request target (path and query) is under /trpc. */
export function isTrpcTarget(target: string): boolean {
  return target.startsWith(TRPC_PREFIX) && ['/', '?', undefined].includes(target[TRPC_PREFIX.length]);
}

/**
 * The options of tRPC's Fastify handler for this service: the context, the deprecation headers of
 * deprecated procedures (the same as on REST), and which errors are logged. Exported so that
 * test/trpc-wire.test.ts serves the router through tRPC's stock plugin with the same options.
 */
export function trpcHandlerOptions(
  router: AppRouter,
  createContext: CreateContext<FastifyReply>,
  databaseHealth?: DatabaseHealth,
): FastifyHandlerOptions<AppRouter, FastifyRequest, FastifyReply> {
  const procedures = trpcInternals(router).procedures;
  return {
    router,
    createContext: ({ req, res }) => createContext(req, res),
    responseMeta: ({ paths }) => ({ headers: deprecationHeadersOf(procedures, paths) }),
    onError: ({ error, req }) => logFailure(req.log, getHTTPStatusCodeFromError(error), error, databaseHealth),
  };
}

/** A deprecated procedure announces it on /trpc too, with the same headers as on REST. */
function deprecationHeadersOf(
  procedures: ReadonlyMap<string, ProcedureInfo>,
  paths: readonly string[] | undefined,
): Record<string, string> {
  const deprecation = paths?.map((path) => procedures.get(path)?.meta.deprecation).find(Boolean);
  return deprecation ? deprecationHeaders(deprecation) : {};
}

export const trpcPlugin: FastifyPluginAsync<TrpcPluginOptions> = async (
  app,
  { router, createContext, keyRateLimiter, maxBatchCalls, databaseHealth },
) => {
  const trpc = trpcInternals<Context>(router);
  const errors = trpcErrorShapes<Context>(router);
  const send = trpcErrorSenders(router).send;

  const trpcOptions = trpcHandlerOptions(router, createContext, databaseHealth);

  /** The headers of a direct answer, per procedure: they never change, so they are built once. */
  const directHeaders = new Map(
    [...trpc.procedures.keys()].map((path) => [path, { ...TRPC_JSON_HEADERS, ...deprecationHeadersOf(trpc.procedures, [path]) }]),
  );

  /** The kinds of one call of each procedure, made once: [batched][direct]. */
  const callKinds = new Map(
    [...trpc.procedures.values()].map((procedure) => {
      const kind = (batched: boolean, direct: boolean): TrpcRequestKind =>
        Object.freeze({ kind: 'call', batched, procedure, direct, plain: true });
      return [
        procedure.path,
        [
          [kind(false, false), kind(false, true)],
          [kind(true, false), kind(true, true)],
        ],
      ] as const;
    }),
  );
  const callKind = (procedure: ProcedureInfo, batched: boolean, direct: boolean) =>
    callKinds.get(procedure.path)![batched ? 1 : 0][direct ? 1 : 0];

  /**
   * What a request is (TrpcRequestKind), from its head alone: the one place a /trpc request is
   * classified. The direct way takes only the plain cases; anything unusual goes to tRPC's handler,
   * which then answers exactly as tRPC does: an `input` given twice (tRPC reads the first), one with
   * a `%` left after decoding (tRPC decodes malformed sequences to U+FFFD, Fastify keeps them), a
   * `trpc-accept` header, a body that starts with a byte order mark (checked once the body is read).
   */
  function classify(request: FastifyRequest, path: string): TrpcRequestKind {
    if (request.method === 'HEAD') return NO_CALL;
    const query = request.query as Record<string, unknown>;
    const batch = query.batch;
    const batched = (Array.isArray(batch) ? batch[0] : batch) === '1'; // tRPC reads the first
    const streamed = isStreamed(request);
    const type = mediaType(request.headers['content-type']);
    if (batched && (streamed || path.includes(','))) {
      const names = path.split(',');
      const runs = request.method === 'GET' ? 'query' : request.method === 'POST' && type === 'application/json' ? 'mutation' : null;
      const plain = runs !== null && names.every((name) => trpc.procedures.get(name)?.type === runs);
      return { kind: 'batch', batched, procedure: undefined, direct: false, plain };
    }
    if (streamed) return NO_CALL;
    const procedure = trpc.procedures.get(path);
    if (procedure === undefined) return NO_CALL;
    const simple = request.headers['trpc-accept'] === undefined && !Array.isArray(batch);
    if (procedure.type === 'query') {
      if (request.method !== 'GET' || type === 'multipart/form-data' || type === 'application/octet-stream') return NO_CALL;
      const input = query.input;
      const plainInput = input === undefined || (typeof input === 'string' && !input.includes('%'));
      return callKind(procedure, batched, simple && type === undefined && plainInput);
    }
    if (procedure.type === 'mutation') {
      if (request.method !== 'POST' || type !== 'application/json') return NO_CALL;
      return callKind(procedure, batched, simple);
    }
    return NO_CALL;
  }

  async function answerDirectly(request: FastifyRequest, reply: FastifyReply, procedure: ProcedureInfo, batched: boolean) {
    const { path } = procedure;
    const type = procedure.type as 'query' | 'mutation';
    // The raw input: the `input` query parameter or the body, JSON text, in a batch under key "0".
    // Parsed lazily, as tRPC does, so that the key check in the middleware comes before any input error.
    const text = type === 'query' ? (request.query as Record<string, unknown>).input : request.body;
    let input: unknown;
    const getRawInput = async () => {
      if (typeof text !== 'string' || text === '') return undefined;
      let parsed: unknown;
      try {
        parsed = parseJson(text); // JSON.parse with the integer rule (src/domain/json-text.ts)
      } catch (cause) {
        throw new TRPCError({ code: 'BAD_REQUEST', message: cause instanceof Error ? cause.message : 'Invalid input', cause });
      }
      if (batched) {
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
          throw new TRPCError({ code: 'BAD_REQUEST', message: '"input" needs to be an object when doing a batch call' });
        }
        parsed = (parsed as Record<string, unknown>)[0];
        if (parsed === undefined) return undefined;
      }
      input = trpc.deserializeInput(parsed);
      return input;
    };

    let ctx: Context | undefined;
    let response: TrpcResponseItem;
    let failed: TRPCError[] = [];
    try {
      ctx = createContext(request, reply);
      response = { result: { data: await trpc.call({ path, type, ctx, getRawInput }) } };
    } catch (cause) {
      const error = trpc.toTRPCError(cause);
      trpcOptions.onError?.({ error, req: request, type, path, input, ctx });
      failed = [error];
      response = errors.callError(error, { type, path, input, ctx });
    }
    const status = trpc.statusOfResponses([response], failed);
    return sendTrpcJson(reply, status, directHeaders.get(path)!, trpc.serializeResponse(batched ? [response] : response));
  }

  // As tRPC's Fastify plugin does: its handler reads JSON bodies as text, and multipart as a stream.
  app.removeContentTypeParser('application/json');
  // Decoded strictly from the bytes (src/domain/json-text.ts, bodyText): bytes that are not UTF-8 are a 400.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      done(null, typeof body === 'string' ? body : bodyText(body));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.removeContentTypeParser('multipart/form-data');
  app.addContentTypeParser('multipart/form-data', {}, (_request, body, done) => done(null, body));

  app.decorateRequest('trpcKind', null);

  // What Fastify refuses before tRPC runs (body limit, content type), and paths with no procedure
  // segment (`/trpc`, `/trpc/a/b`): tRPC's shape, not the REST envelope.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const answer = answerForFastifyError(error);
    logFailure(request.log, answer.status, error, databaseHealth);
    return send(reply, answer);
  });
  app.setNotFoundHandler((request, reply) =>
    send(reply, { status: 404, message: `No procedure found on path "${request.url.split('?')[0]}"` }),
  );

  // The request is classified (`classify`), and the log names the procedures called
  // (`/trpc/pets.list`, a batch: `/trpc/pets.list,pets.get`); unknown names stay out of it: they are
  // the caller's text. Then the early refusals, before the body is read: no identity (authentication
  // decided why), and a batch that cannot be served or is past its key's budget. Answered here,
  // done() is not called: neither the body nor the handler is reached. A callback-style hook: a call
  // with a key passes on without a promise of its own.
  const singlePatterns = new Map([...trpc.procedures.keys()].map((path) => [path, `${app.prefix}/${path}`]));
  app.addHook('onRequest', (request, reply, done) => {
    const { path } = request.params as { path?: string };
    if (path === undefined) return done();
    const pattern = singlePatterns.get(path);
    if (pattern !== undefined) request.routePattern = pattern;
    else if (path.split(',').every((name) => trpc.procedures.has(name))) request.routePattern = `${app.prefix}/${path}`;
    const kind = classify(request, path);
    request.trpcKind = kind;
    if (request.identity === null) {
      const refusal = request.identityRefusal ?? keyRefusal(false);
      if (kind.kind === 'none') return done();
      if (kind.kind === 'batch') return refuseWhole(request, reply, refusal);
      prepareRefusal(request, reply, refusal);
      const call = errors.refusedCall(refusal, { type: kind.procedure!.type, path, input: undefined, ctx: undefined });
      return void sendTrpcJson(
        reply,
        answerForRefusal(refusal).status,
        directHeaders.get(path)!,
        trpc.serializeResponse(kind.batched ? [call] : call),
      );
    }
    if (kind.kind !== 'batch' || !path.includes(',')) return done();
    checkBatch(request, reply, path, kind.plain, done);
  });

  /** A request refused as a whole, before its body is read: one error, whatever the batch names. */
  function refuseWhole(request: FastifyRequest, reply: FastifyReply, refusal: Refusal): void {
    prepareRefusal(request, reply, refusal);
    sendTrpcJson(reply, answerForRefusal(refusal).status, TRPC_JSON_HEADERS, errors.refusedRequest(refusal));
  }

  /**
   * A batch from a known caller, before its body is read: over TRPC_MAX_BATCH_CALLS, or naming a
   * procedure that does not exist, it is refused with one error, so that its cost does not grow with
   * the calls it names. A plain batch's calls are counted against the key's budget together, once
   * (`request.budget`, which every call's middleware then reads); past it, the batch is refused as a
   * whole. (Any other batch's calls are counted where they run, as tRPC runs them.)
   */
  function checkBatch(request: FastifyRequest, reply: FastifyReply, path: string, plain: boolean, done: (error?: Error) => void): void {
    const names = path.split(',');
    if (names.length > maxBatchCalls) return refuseWhole(request, reply, batchTooLargeRefusal(maxBatchCalls));
    const unknown = names.find((name) => !trpc.procedures.has(name));
    if (unknown !== undefined) return refuseWhole(request, reply, unknownProcedureRefusal(unknown));
    if (keyRateLimiter === null || !plain) return done();
    const limiter = keyRateLimiter;
    const whenDecided = (decision: LimitDecision) => {
      setRateLimitHeaders(reply, decision, limiter.windowMs);
      if (decision.allowed) return done();
      refuseWhole(request, reply, keyRateLimitRefusal(decision));
    };
    const taken = limiter.take(request.identity!.keyId, names.length);
    if (taken instanceof Promise) taken.then(whenDecided, done);
    else whenDecided(taken);
  }

  app.all<{ Params: { path: string } }>('/:path', async (request, reply) => {
    const { path } = request.params;
    // tRPC decodes the path once more and refuses what it cannot decode, but as text/plain: the
    // same answer here, as JSON. (A URL that Fastify itself could not decode arrives with its `%`
    // escaped: src/http/rest-routes.ts, escapeUndecodablePath.)
    if (path.includes('%') && !decodable(path)) return send(reply, { status: 400, message: `Invalid URL-encoding in path "${path}"` });
    // Methods a Fetch Request cannot carry (undici refuses TRACE): tRPC's handler would throw (500).
    if (request.method === 'TRACE') {
      reply.header('allow', TRPC_METHODS);
      return send(reply, { status: 405, message: `${request.method} is not supported here; use GET or POST` });
    }
    const kind = request.trpcKind!;
    if (kind.direct && (typeof request.body !== 'string' || !request.body.startsWith(BOM)))
      return answerDirectly(request, reply, kind.procedure!, kind.batched);
    const url = request.raw.url;
    try {
      applyIntegerRule(request);
      await fastifyRequestHandler({ ...trpcOptions, req: request, res: reply, path });
    } finally {
      request.raw.url = url; // the log shows the URL as sent
    }
    return reply;
  });
};
