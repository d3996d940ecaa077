// The typed tRPC surface at /trpc, for internal TypeScript apps (`createTRPCClient<AppRouter>`).
// Every answer under /trpc is in tRPC's own format, which tRPC clients decode: procedure errors, and
// also what Fastify or Node refuse before tRPC runs (a body over the limit, a content type with no
// parser, a malformed URL, an unknown path, headers too large: `trpcRequestErrors` below, used by
// src/app.ts for the last two). Errors never carry a stack trace (src/api/trpc.ts).
//
// Two ways through, one wire format. The common call, one query (GET) or one mutation (POST, JSON),
// alone or as a batch of one (what httpBatchLink sends for a lone call), not streamed, is answered
// here directly with tRPC's own response-building functions (src/api/trpc-internals.ts). Every
// other request (larger batches, `trpc-accept: application/jsonl`, other content types, unknown
// procedures, wrong methods, HEAD) goes to tRPC's Fastify handler unchanged. Why: tRPC's handler
// builds a Fetch `Request` and `Response` per call, most of a small call's time (docs/benchmarks.md).
// test/trpc-wire.test.ts holds both ways to tRPC's stock Fastify plugin, request by request.
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { TRPCError, type AnyTRPCRouter, type TRPC_ERROR_CODE_KEY } from '@trpc/server';
import { fastifyRequestHandler, type FastifyHandlerOptions } from '@trpc/server/adapters/fastify';
import type { AppRouter } from '../api/root-router.js';
import type { Context } from '../api/context.js';
import { trpcInternals, type ProcedureInfo, type TrpcResponseItem } from '../api/trpc-internals.js';
import { closeAfterRefusal } from './authentication.js';
import { bearerChallenge } from './bearer-challenge.js';
import { deprecationHeaders } from './deprecation.js';
import { ERROR_CODES, envelopeForFastifyError, rawHttpResponse, type RawClientError } from './error-envelope.js';

export const TRPC_PREFIX = '/trpc';

export interface TrpcPluginOptions {
  router: AppRouter;
  createContext: (request: FastifyRequest, reply: FastifyReply) => Context;
}

/** tRPC answers every call with these (resolveResponse). */
const TRPC_HEADERS = { vary: 'trpc-accept, accept', 'content-type': 'application/json' };

/** A UTF-8 byte order mark, which tRPC's handler drops from a body (decoding it as a Fetch body). */
const BOM = '\uFEFF';

/** The media type of a Content-Type header, as tRPC compares it: lower case, no parameters. */
function mediaType(header: string | undefined): string | undefined {
  return header?.split(';', 1)[0]?.trim().toLowerCase();
}

/** tRPC's JSON text is already serialized: sent as it is. */
const asIs = (text: string) => text;

/**
 * Sends tRPC's JSON text as tRPC's handler does: `Content-Type: application/json` exactly. Fastify
 * appends `; charset=utf-8` to a string body unless the reply has a serializer of its own; the
 * text goes out as a string, in one write with the head (a Buffer would be a copy and a second chunk).
 */
function sendJson(reply: FastifyReply, status: number, headers: Record<string, string>, text: string): FastifyReply {
  return reply.code(status).headers(headers).serializer(asIs).send(text);
}

function decodable(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/** Whether a request target (path and query) is under /trpc. */
export function isTrpcTarget(target: string): boolean {
  return target.startsWith(TRPC_PREFIX) && ['/', '?', undefined].includes(target[TRPC_PREFIX.length]);
}

/** The tRPC code for an HTTP status we answer with; tRPC has none for 431, so BAD_REQUEST (with httpStatus 431). */
function trpcCodeOf(status: number): TRPC_ERROR_CODE_KEY {
  const code = ERROR_CODES[status as keyof typeof ERROR_CODES];
  return !code || code === 'REQUEST_HEADER_FIELDS_TOO_LARGE' ? (status >= 500 ? 'INTERNAL_SERVER_ERROR' : 'BAD_REQUEST') : code;
}

/**
 * Answers in tRPC's error shape for requests refused before tRPC runs. src/app.ts uses it for
 * /trpc targets in Fastify's `frameworkErrors` and in the raw `clientErrorHandler`; the plugin
 * below for its own error and not-found handlers.
 */
export function trpcRequestErrors(router: AnyTRPCRouter) {
  const trpc = trpcInternals(router);
  const body = (status: number, message: string) => trpc.requestErrorBody(trpcCodeOf(status), message, status);
  const send = (reply: FastifyReply, status: number, message: string): FastifyReply =>
    sendJson(reply, status, TRPC_HEADERS, body(status, message));
  return {
    send,
    /** An error Fastify raised (body limit, content type, malformed URL), with the envelope's status and words. */
    sendFastifyError(reply: FastifyReply, error: FastifyError): FastifyReply {
      const { status, message } = envelopeForFastifyError(error);
      return send(reply, status, message);
    },
    /** A whole HTTP response for a request Node's parser refused. */
    rawResponse(refusal: RawClientError): string {
      return rawHttpResponse(refusal, TRPC_HEADERS['content-type'], body(refusal.status, refusal.message));
    },
  };
}

/**
 * The options of tRPC's Fastify handler for this service: the context, the deprecation headers of
 * deprecated procedures (the same as on REST), and which errors are logged. Exported so that
 * test/trpc-wire.test.ts serves the router through tRPC's stock plugin with the same options.
 */
export function trpcHandlerOptions(
  router: AppRouter,
  createContext: TrpcPluginOptions['createContext'],
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

export const trpcPlugin: FastifyPluginAsync<TrpcPluginOptions> = async (app, { router, createContext }) => {
  const trpc = trpcInternals<Context>(router);
  const requestErrors = trpcRequestErrors(router);

  const trpcOptions = trpcHandlerOptions(router, createContext);

  /** The headers of a direct answer, per procedure: they never change, so they are built once. */
  const directHeaders = new Map(
    [...trpc.procedures.keys()].map((path) => [path, { ...TRPC_HEADERS, ...deprecationHeadersOf(trpc.procedures, [path]) }]),
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
        parsed = JSON.parse(text);
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
    let errors: TRPCError[] = [];
    try {
      ctx = createContext(request, reply);
      response = { result: { data: await trpc.call({ path, type, ctx, getRawInput }) } };
    } catch (cause) {
      const error = trpc.toTRPCError(cause);
      trpcOptions.onError?.({ error, req: request, type, path, input, ctx });
      errors = [error];
      response = { error: trpc.errorShape({ error, type, path, input, ctx }) };
    }
    const status = trpc.statusOfResponses([response], errors);
    return sendJson(reply, status, directHeaders.get(path)!, trpc.serializeResponse(batched ? [response] : response));
  }

  // As tRPC's Fastify plugin does: its handler reads JSON bodies as text, and multipart as a stream.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  app.removeContentTypeParser('multipart/form-data');
  app.addContentTypeParser('multipart/form-data', {}, (_request, body, done) => done(null, body));

  // What Fastify refuses before tRPC runs (body limit, content type), and paths with no procedure
  // segment (`/trpc`, `/trpc/a/b`): tRPC's shape, not the REST envelope.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if ((error.statusCode ?? 500) >= 500) request.log.error({ err: error }, 'request failed');
    return requestErrors.sendFastifyError(reply, error);
  });
  app.setNotFoundHandler((request, reply) => requestErrors.send(reply, 404, `No procedure found on path "${request.url.split('?')[0]}"`));

  // Every 401 carries the Bearer challenge. onSend sees the status of tRPC's handler's answer only
  // on the Response it hands to Fastify (Fastify copies it to the reply after this hook).
  app.addHook('onSend', (request, reply, payload, done) => {
    const status = payload instanceof Response ? payload.status : reply.statusCode;
    if (status === 401) reply.header('www-authenticate', bearerChallenge(request));
    done(null, payload);
  });

  // The log names the procedures called (`/trpc/pets.list`, a batch: `/trpc/pets.list,pets.get`);
  // unknown names stay out of it: they are the caller's text.
  // A call without a valid key is answered here, before its body is read, and its connection
  // closed (every procedure needs a key; the middleware refuses before it looks at the input).
  // A callback-style hook: a call with a key passes on without a promise of its own.
  const singlePatterns = new Map([...trpc.procedures.keys()].map((path) => [path, `${app.prefix}/${path}`]));
  app.addHook('onRequest', (request, reply, done) => {
    const { path } = request.params as { path?: string };
    if (path !== undefined) {
      const pattern = singlePatterns.get(path);
      if (pattern !== undefined) request.routePattern = pattern;
      else if (path.split(',').every((name) => trpc.procedures.has(name))) request.routePattern = `${app.prefix}/${path}`;
    }
    if (request.identity || path === undefined) return done();
    const procedure = directProcedure(request, path);
    if (!procedure) return done();
    closeAfterRefusal(request, reply);
    // Answered here: done() is not called, so the route handler does not run.
    answerDirectly(request, reply, procedure).catch((error: Error) => done(error));
  });

  app.all<{ Params: { path: string } }>('/:path', async (request, reply) => {
    const { path } = request.params;
    // tRPC decodes the path once more and refuses what it cannot decode, but as text/plain: the
    // same answer here, as JSON. (A URL that Fastify itself could not decode arrives with its `%`
    // escaped: src/http/rest-routes.ts, escapeUndecodablePath.)
    if (path.includes('%') && !decodable(path)) return requestErrors.send(reply, 400, `Invalid URL-encoding in path "${path}"`);
    const procedure = directProcedure(request, path);
    if (procedure) return answerDirectly(request, reply, procedure);
    await fastifyRequestHandler({ ...trpcOptions, req: request, res: reply, path });
    return reply;
  });
};
