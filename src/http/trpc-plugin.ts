// The typed tRPC surface at /trpc, for internal TypeScript apps (`createTRPCClient<AppRouter>`).
// Every answer under /trpc is in tRPC's own format, which tRPC clients decode: procedure errors, and
// also what Fastify or Node refuse before tRPC runs (a body over the limit, a content type with no
// parser, a malformed URL, an unknown path, headers too large), all shaped by src/api/errors.ts.
//
// A request without a valid identity is refused here before its body is read (src/api/refusals.ts
// decides), and its connection closed: a single call with the answer tRPC's handler would give it,
// a batch or a stream with one error for the whole request, which tRPC's links give to every call.
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
import type { AppRouter } from '../api/root-router.js';
import type { Context, CreateContext } from '../api/context.js';
import { answerForFastifyError, answerForRefusal, sendTrpcJson, TRPC_JSON_HEADERS, trpcErrorShapes } from '../api/errors.js';
import { batchTooLargeRefusal, identityRefusal, keyRateLimitRefusal, unknownProcedureRefusal, type Refusal } from '../api/refusals.js';
import { trpcInternals, type ProcedureInfo, type TrpcResponseItem } from '../api/trpc-internals.js';
import { bodyText, parseJson, withIntegerRule } from '../domain/json-text.js';
import type { LimitDecision, Limiter } from '../limits/fixed-window-limiter.js';
import { prepareRefusal } from './authentication.js';
import { deprecationHeaders } from './deprecation.js';
import { rateLimitHeaders } from './rate-limit-headers.js';

export const TRPC_PREFIX = '/trpc';

export interface TrpcPluginOptions {
  router: AppRouter;
  createContext: CreateContext<FastifyReply>;
  /** The per-key limit (null: off): a batch from a key past its budget is refused as a whole. */
  keyRateLimiter: Limiter | null;
  /** The most calls a batch may name (TRPC_MAX_BATCH_CALLS). */
  maxBatchCalls: number;
}

/** A UTF-8 byte order mark, which tRPC's handler drops from a body (decoding it as a Fetch body). */
const BOM = '\uFEFF';

/** The media type of a Content-Type header, as tRPC compares it: lower case, no parameters. */
function mediaType(header: string | undefined): string | undefined {
  return header?.split(';', 1)[0]?.trim().toLowerCase();
}

/** Whether an Accept header asks for a stream, as tRPC reads it (one of its types is exactly jsonl). */
function acceptsJsonl(accept: string | undefined): boolean {
  return accept !== undefined && accept.split(',').some((type) => type.trim() === 'application/jsonl');
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
): FastifyHandlerOptions<AppRouter, FastifyRequest, FastifyReply> {
  const procedures = trpcInternals(router).procedures;
  return {
    router,
    createContext: ({ req, res }) => createContext(req, res),
    responseMeta: ({ paths }) => ({ headers: deprecationHeadersOf(procedures, paths) }),
    onError: ({ error, req }) => {
      if (error.code === 'INTERNAL_SERVER_ERROR') req.log.error({ err: error.cause ?? error }, 'procedure failed');
      if (error.code === 'SERVICE_UNAVAILABLE') req.log.warn({ err: error.cause ?? error }, 'database unavailable');
    },
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

/** Marks a request refused as a whole (a batch of several calls, or a stream), not as its one call. */
const WHOLE_REQUEST = Symbol('whole request');

export const trpcPlugin: FastifyPluginAsync<TrpcPluginOptions> = async (app, { router, createContext, keyRateLimiter, maxBatchCalls }) => {
  const trpc = trpcInternals<Context>(router);
  const errors = trpcErrorShapes<Context>(router);

  const trpcOptions = trpcHandlerOptions(router, createContext);

  /** The headers of a direct answer, per procedure: they never change, so they are built once. */
  const directHeaders = new Map(
    [...trpc.procedures.keys()].map((path) => [path, { ...TRPC_JSON_HEADERS, ...deprecationHeadersOf(trpc.procedures, [path]) }]),
  );

  /**
   * The procedure a request can take the direct way to, or undefined for tRPC's handler. Only the
   * plain cases come here; anything unusual goes to tRPC's handler, which then answers exactly as
   * tRPC does: an `input` given twice (tRPC reads the first), one with a `%` left after decoding
   * (tRPC decodes malformed sequences to U+FFFD, Fastify keeps them), a body that starts with a
   * byte order mark (tRPC's decoding drops up to two).
   */
  function directProcedure(request: FastifyRequest, path: string): ProcedureInfo | undefined {
    const procedure = trpc.procedures.get(path);
    if (!procedure || request.headers['trpc-accept'] !== undefined || request.headers.accept?.includes('application/jsonl'))
      return undefined;
    const { batch, input } = request.query as Record<string, unknown>;
    if (batch !== undefined && batch !== '1') return undefined;
    if (procedure.type === 'query') {
      const plainInput = input === undefined || (typeof input === 'string' && !input.includes('%'));
      return request.method === 'GET' && request.headers['content-type'] === undefined && plainInput ? procedure : undefined;
    }
    if (procedure.type === 'mutation') {
      const plainBody = typeof request.body !== 'string' || !request.body.startsWith(BOM);
      return request.method === 'POST' && mediaType(request.headers['content-type']) === 'application/json' && plainBody
        ? procedure
        : undefined;
    }
    return undefined;
  }

  async function answerDirectly(request: FastifyRequest, reply: FastifyReply, procedure: ProcedureInfo) {
    const { path } = procedure;
    const type = procedure.type as 'query' | 'mutation';
    const query = request.query as Record<string, unknown>;
    const batched = query.batch === '1';
    // The raw input: the `input` query parameter or the body, JSON text, in a batch under key "0".
    // Parsed lazily, as tRPC does, so that the key check in the middleware comes before any input error.
    const text = type === 'query' ? query.input : request.body;
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

  /**
   * How a request without a valid identity is refused: as the one call tRPC would run (the answer
   * tRPC's handler gives it from the middleware), or as a whole when it is a batch of several calls
   * or a stream, with one error that does not grow with the batch. Undefined when tRPC answers it
   * without running a call (HEAD, no such procedure, a wrong method, a content type it does not
   * read as JSON, a stream that is not a batch).
   */
  function refusedAs(request: FastifyRequest, path: string, batched: boolean): ProcedureInfo | typeof WHOLE_REQUEST | undefined {
    if (request.method === 'HEAD') return undefined;
    const streamed = request.headers['trpc-accept'] !== undefined || acceptsJsonl(request.headers.accept);
    if (batched && (streamed || path.includes(','))) return WHOLE_REQUEST;
    if (streamed) return undefined;
    const procedure = trpc.procedures.get(path);
    const type = mediaType(request.headers['content-type']);
    if (procedure?.type === 'query') {
      return request.method === 'GET' && type !== 'multipart/form-data' && type !== 'application/octet-stream' ? procedure : undefined;
    }
    if (procedure?.type === 'mutation') return request.method === 'POST' && type === 'application/json' ? procedure : undefined;
    return undefined;
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

  // What Fastify refuses before tRPC runs (body limit, content type), and paths with no procedure
  // segment (`/trpc`, `/trpc/a/b`): tRPC's shape, not the REST envelope.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if ((error.statusCode ?? 500) >= 500) request.log.error({ err: error }, 'request failed');
    return errors.send(reply, answerForFastifyError(error));
  });
  app.setNotFoundHandler((request, reply) =>
    errors.send(reply, { status: 404, message: `No procedure found on path "${request.url.split('?')[0]}"` }),
  );

  // The log names the procedures called (`/trpc/pets.list`, a batch: `/trpc/pets.list,pets.get`);
  // unknown names stay out of it: they are the caller's text. Then the early refusal: why, from
  // src/api/refusals.ts (another early reason would be checked beside identityRefusal); as what,
  // from `refusedAs`. Answered here, done() is not called: neither the body nor the handler is reached.
  // A callback-style hook: a call with a key passes on without a promise of its own.
  const singlePatterns = new Map([...trpc.procedures.keys()].map((path) => [path, `${app.prefix}/${path}`]));
  app.addHook('onRequest', (request, reply, done) => {
    const { path } = request.params as { path?: string };
    if (path === undefined) return done();
    const pattern = singlePatterns.get(path);
    if (pattern !== undefined) request.routePattern = pattern;
    else if (path.split(',').every((name) => trpc.procedures.has(name))) request.routePattern = `${app.prefix}/${path}`;
    const refusal = identityRefusal(request);
    const { batch } = request.query as Record<string, unknown>;
    const batched = (Array.isArray(batch) ? batch[0] : batch) === '1'; // tRPC reads the first
    if (refusal === null) {
      if (!batched || !path.includes(',') || request.method === 'HEAD') return done();
      return checkBatch(request, reply, path, done);
    }
    const refused = refusedAs(request, path, batched);
    if (refused === undefined) return done();
    if (refused === WHOLE_REQUEST) return refuseWhole(request, reply, refusal);
    prepareRefusal(request, reply, refusal);
    const { status } = answerForRefusal(refusal);
    const call = errors.refusedCall(refusal, { type: refused.type, path, input: undefined, ctx: undefined });
    sendTrpcJson(reply, status, directHeaders.get(path)!, trpc.serializeResponse(batched ? [call] : call));
  });

  /** A request refused as a whole, before its body is read: one error, whatever the batch names. */
  function refuseWhole(request: FastifyRequest, reply: FastifyReply, refusal: Refusal): void {
    prepareRefusal(request, reply, refusal);
    sendTrpcJson(reply, answerForRefusal(refusal).status, TRPC_JSON_HEADERS, errors.refusedRequest(refusal));
  }

  /**
   * A batch from a known caller, before its body is read: over TRPC_MAX_BATCH_CALLS, naming a
   * procedure that does not exist, or from a key already past its budget, it is refused with one
   * error, so that its cost does not grow with the calls it names.
   */
  function checkBatch(request: FastifyRequest, reply: FastifyReply, path: string, done: (error?: Error) => void): void {
    const names = path.split(',');
    if (names.length > maxBatchCalls) return refuseWhole(request, reply, batchTooLargeRefusal(maxBatchCalls));
    const unknown = names.find((name) => !trpc.procedures.has(name));
    if (unknown !== undefined) return refuseWhole(request, reply, unknownProcedureRefusal(unknown));
    if (keyRateLimiter === null) return done();
    const limiter = keyRateLimiter;
    const whenDecided = (decision: LimitDecision) => {
      if (decision.allowed) return done();
      reply.headers(rateLimitHeaders('per-key', decision, limiter.windowMs));
      refuseWhole(request, reply, keyRateLimitRefusal(decision));
    };
    const standing = limiter.peek(request.identity!.keyId);
    if (standing instanceof Promise) standing.then(whenDecided, done);
    else whenDecided(standing);
  }

  app.all<{ Params: { path: string } }>('/:path', async (request, reply) => {
    const { path } = request.params;
    // tRPC decodes the path once more and refuses what it cannot decode, but as text/plain: the
    // same answer here, as JSON. (A URL that Fastify itself could not decode arrives with its `%`
    // escaped: src/http/rest-routes.ts, escapeUndecodablePath.)
    if (path.includes('%') && !decodable(path))
      return errors.send(reply, { status: 400, message: `Invalid URL-encoding in path "${path}"` });
    // Methods a Fetch Request cannot carry (undici refuses TRACE): tRPC's handler would throw (500).
    if (request.method === 'TRACE') {
      reply.header('allow', 'GET, POST');
      return errors.send(reply, { status: 405, message: `${request.method} is not supported here; use GET or POST` });
    }
    const procedure = directProcedure(request, path);
    if (procedure) return answerDirectly(request, reply, procedure);
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
