// The typed tRPC surface at /trpc. Every answer here is in tRPC's wire format, including what Fastify
// or Node refuse before tRPC runs (shaped by src/api/errors.ts).
// Each request is classified once from its head (`classify`, kept as `request.call.trpc`). The common
// call (one query, or one JSON mutation, alone or as a batch of one, not streamed) is answered directly
// with tRPC's response functions; anything else goes to tRPC's Fastify handler. A departure from
// fastifyTRPCPlugin: docs/architecture.md ("departures"); test/trpc-wire.test.ts holds it to the stock plugin.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { TRPCError } from '@trpc/server';
import { fastifyRequestHandler, type FastifyHandlerOptions } from '@trpc/server/adapters/fastify';
import type { AppRouter } from '../api/root-router.js';
import type { Context, CreateContext } from '../api/trpc.js';
import { answerForRefusal, trpcErrorShapes } from '../api/errors.js';
import { batchTooLargeRefusal, unknownProcedureRefusal, type Refusal } from '../api/refusals.js';
import { trpcInternals, type ProcedureInfo, type TrpcResponseItem } from '../api/trpc-internals.js';
import { bodyText, parseJson, withIntegerRule } from '../domain/json-text.js';
import type { Limiter } from '../limits/fixed-window-limiter.js';
import {
  callerRefusal,
  refuseEarly,
  sendOrFail,
  sendTrpcJson,
  takeBudget,
  TRPC_JSON_HEADERS,
  trpcErrorSenders,
  type CallPipeline,
} from './call-pipeline.js';
import { decodable, type TrpcRequestKind } from './request-record.js';
import { deprecationHeadersOf } from './deprecation-headers.js';

/** The methods tRPC serves (a 405's Allow for those it cannot be handed). */
const TRPC_METHODS = 'GET, POST';

export interface TrpcPluginOptions {
  router: AppRouter;
  createContext: CreateContext<FastifyReply>;
  keyRateLimiter: Limiter | null;
  /** TRPC_MAX_BATCH_CALLS. */
  maxBatchCalls: number;
  pipeline: CallPipeline;
}

/** What a /trpc request is, decided once from its head (`classify`). */

const NO_CALL: TrpcRequestKind = Object.freeze({ kind: 'none', batched: false, procedure: undefined, direct: false });
const NO_BATCHED_CALL: TrpcRequestKind = Object.freeze({ kind: 'none', batched: true, procedure: undefined, direct: false });
const NO_ERRORS: TRPCError[] = [];
/** A batch, as far as the shape of its refusal goes. */
const BATCH: TrpcRequestKind = Object.freeze({ kind: 'batch', batched: true, procedure: undefined, direct: false });

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

/** tRPC's handler reads the JSON text itself (GET's `input`, or the body): the integer rule (json-text.ts) is applied to it first. */
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

/** tRPC's handler options; exported so test/trpc-wire.test.ts runs tRPC's stock plugin with the same. */
export function trpcHandlerOptions(
  router: AppRouter,
  createContext: CreateContext<FastifyReply>,
  callFailed?: CallPipeline['callFailed'],
): FastifyHandlerOptions<AppRouter, FastifyRequest, FastifyReply> {
  const procedures = trpcInternals(router).procedures;
  return {
    router,
    createContext: ({ req, res }) => createContext(req, res),
    responseMeta: ({ paths = [] }) => ({ headers: deprecationHeadersOf(paths.map((path) => procedures.get(path)?.meta)) ?? {} }),
    onError: ({ error, req }) => callFailed?.(req, error),
  };
}

export const trpcPlugin: FastifyPluginAsync<TrpcPluginOptions> = async (
  app,
  { router, createContext, keyRateLimiter, maxBatchCalls, pipeline },
) => {
  const trpc = trpcInternals<Context>(router);
  const errors = trpcErrorShapes<Context>(router);
  const send = trpcErrorSenders(router).send;

  const trpcOptions = trpcHandlerOptions(router, createContext, pipeline.callFailed);

  const directHeaders = new Map(
    [...trpc.procedures.keys()].map((path) => [path, { ...TRPC_JSON_HEADERS, ...deprecationHeadersOf([trpc.procedures.get(path)?.meta]) }]),
  );

  /** The kinds of one call of each procedure, made once: [batched][direct]. */
  const callKinds = new Map(
    [...trpc.procedures.values()].map((procedure) => {
      const kind = (batched: boolean, direct: boolean): TrpcRequestKind => Object.freeze({ kind: 'call', batched, procedure, direct });
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
   * The one place a /trpc request is classified, from its head. tRPC's handler gets the unusual cases: an `input` given
   * twice, a `%` left after decoding (tRPC decodes malformed sequences to U+FFFD, Fastify keeps them), `trpc-accept`.
   */
  function classify(request: FastifyRequest, path: string, names: readonly string[], batched: boolean): TrpcRequestKind {
    if (request.method === 'HEAD') return NO_CALL;
    const query = request.query as Record<string, unknown>;
    const streamed = isStreamed(request);
    const type = mediaType(request.headers['content-type']);
    if (batched && (streamed || names.length > 1)) return BATCH;
    const none = batched ? NO_BATCHED_CALL : NO_CALL;
    if (streamed) return none;
    const procedure = trpc.procedures.get(path);
    if (procedure === undefined) return none;
    const simple = request.headers['trpc-accept'] === undefined && !Array.isArray(query.batch);
    if (procedure.type === 'query') {
      if (request.method !== 'GET' || type === 'multipart/form-data' || type === 'application/octet-stream') return none;
      const input = query.input;
      const plainInput = input === undefined || (typeof input === 'string' && !input.includes('%'));
      return callKind(procedure, batched, simple && type === undefined && plainInput);
    }
    if (procedure.type === 'mutation') {
      if (request.method !== 'POST' || type !== 'application/json') return none;
      return callKind(procedure, batched, simple);
    }
    return none;
  }

  function answerDirectly(request: FastifyRequest, reply: FastifyReply, procedure: ProcedureInfo, batched: boolean) {
    const { path } = procedure;
    const type = procedure.type as 'query' | 'mutation';
    // JSON text (a batch's under key "0"), parsed lazily as tRPC does: the key check comes before any input error.
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

    const ctx = createContext(request, reply);
    const encode = (response: TrpcResponseItem, failed: TRPCError[]) =>
      sendOrFail(reply, () =>
        sendTrpcJson(
          reply,
          trpc.statusOfResponses([response], failed),
          directHeaders.get(path)!,
          trpc.serializeResponse(batched ? [response] : response),
        ),
      );
    return pipeline.run(
      request,
      { path, type, ctx, getRawInput },
      (data) => encode({ result: { data } }, NO_ERRORS),
      (error) => encode(errors.callError(error, { type, path, input, ctx }), [error]),
    );
  }

  // As tRPC's Fastify plugin does: JSON read as text (decoded strictly: bytes not UTF-8 are a 400), multipart as a stream.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      done(null, typeof body === 'string' ? body : bodyText(body));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.removeContentTypeParser('multipart/form-data');
  app.addContentTypeParser('multipart/form-data', {}, (_request, body, done) => done(null, body));

  // What Fastify refuses before tRPC runs is answered in tRPC's shape by the app's error handler
  // (call-pipeline.ts, fastifyError). Paths with no procedure segment (`/trpc`, `/trpc/a/b`):
  app.setNotFoundHandler((request, reply) =>
    send(reply, { status: 404, message: `No procedure found on path "${request.url.split('?')[0]}"` }),
  );

  // Before the body is read: the request is classified, the procedures it names recorded for the log
  // (only real ones, as tRPC reads the path: unknown names are the caller's text), and refused early when the
  // caller has no valid identity, a batch cannot be served, or the key's budget is spent (answered here:
  // done() is not called). A keyed request naming only real procedures takes the budget for all its calls
  // together, once, whatever tRPC will make of it (as a REST call does, a body not JSON too); one naming
  // an unknown procedure takes none (as REST's unknown paths). No call's middleware counts again.
  const singles = new Map([...trpc.procedures.keys()].map((path) => [path, { route: `${app.prefix}/${path}`, names: [path] }]));
  app.addHook('onRequest', (request, reply, done) => {
    const { path } = request.params as { path?: string };
    if (path === undefined) return done();
    const batch = (request.query as Record<string, unknown>).batch;
    const batched = (Array.isArray(batch) ? batch[0] : batch) === '1'; // tRPC reads the first
    const single = singles.get(path);
    const names = single?.names ?? (batched ? path.split(',') : [path]); // unbatched, `a,b` is one (unknown) name to tRPC
    if (single !== undefined || names.every((name) => trpc.procedures.has(name))) {
      request.call.route = single?.route ?? `${app.prefix}/${path}`;
      request.call.procedures = names;
    }
    const kind = classify(request, path, names, batched);
    request.call.trpc = kind;
    const refusal = callerRefusal(request.call) ?? (kind.kind === 'batch' ? batchRefusal(names) : null);
    if (refusal) {
      if (kind.kind === 'none') return done();
      refuseEarly(request, reply, refusal);
      return sendRefusal(reply, kind, path, refusal);
    }
    if (request.call.procedures === null) return done();
    takeBudget(request, reply, keyRateLimiter, names.length, (over) => sendRefusal(reply, kind, path, over), done);
  });

  /**
   * An early refusal: one call's error as tRPC's handler gives it (a request tRPC would not run, `none`: as if
   * its procedure had refused it); a batch or stream gets one error.
   */
  function sendRefusal(reply: FastifyReply, kind: TrpcRequestKind, path: string, refusal: Refusal): void {
    const status = answerForRefusal(refusal).status;
    const procedure = kind.procedure ?? trpc.procedures.get(path);
    if (kind.kind === 'batch' || procedure === undefined)
      return void sendTrpcJson(reply, status, TRPC_JSON_HEADERS, errors.refusedRequest(refusal));
    const call = errors.refusedCall(refusal, { type: procedure.type, path, input: undefined, ctx: undefined });
    sendTrpcJson(reply, status, directHeaders.get(path)!, trpc.serializeResponse(kind.batched ? [call] : call));
  }

  /**
   * A batch over TRPC_MAX_BATCH_CALLS or naming an unknown procedure gets one error, before any budget is
   * taken (its cost does not grow). A stream of one call (a batch of one name) is left to tRPC, as it would be.
   */
  function batchRefusal(names: readonly string[]): Refusal | null {
    if (names.length === 1) return null;
    if (names.length > maxBatchCalls) return batchTooLargeRefusal(maxBatchCalls);
    const unknown = names.find((name) => !trpc.procedures.has(name));
    return unknown === undefined ? null : unknownProcedureRefusal(unknown);
  }

  // Not async: what is answered here returns nothing (a returned reply is awaited through `Reply.then`,
  // end-of-stream listeners per request: docs/benchmarks.md); only tRPC's own handler is awaited.
  app.all<{ Params: { path: string } }>('/:path', (request, reply) => {
    const { path } = request.params;
    // tRPC refuses a path it cannot decode as text/plain: the same answer here, as JSON. (One Fastify
    // could not decode arrives with its `%` escaped: request-record.ts, escapeUndecodablePath.)
    if (path.includes('%') && !decodable(path)) return void send(reply, { status: 400, message: `Invalid URL-encoding in path "${path}"` });
    // Methods a Fetch Request cannot carry (undici refuses TRACE): tRPC's handler would throw (500).
    if (request.method === 'TRACE') {
      reply.header('allow', TRPC_METHODS);
      return void send(reply, { status: 405, message: `${request.method} is not supported here; use GET or POST` });
    }
    const kind = request.call.trpc!;
    if (kind.direct && (typeof request.body !== 'string' || !request.body.startsWith(BOM)))
      return void answerDirectly(request, reply, kind.procedure!, kind.batched);
    return handleWithTrpc(request, reply, path);
  });

  async function handleWithTrpc(request: FastifyRequest, reply: FastifyReply, path: string) {
    const url = request.raw.url;
    try {
      applyIntegerRule(request);
      await fastifyRequestHandler({ ...trpcOptions, req: request, res: reply, path });
    } finally {
      request.raw.url = url; // the log shows the URL as sent
    }
    return reply;
  }
};
