// The typed tRPC surface at /trpc, for internal TypeScript apps (`createTRPCClient<AppRouter>`).
// Errors keep tRPC's own format (clients decode it); they never carry a stack trace (src/api/trpc.ts).
//
// Two ways through, one wire format. The common call, one query (GET) or one mutation (POST, JSON),
// alone or as a batch of one (what httpBatchLink sends for a lone call), not streamed, is
// answered here directly: the procedure through
// `callTRPCProcedure`, the body and status from tRPC's own `getErrorShape`, `transformTRPCResponse`
// and `getHTTPStatusCode`, the same headers. Every other request (batches, `trpc-accept:
// application/jsonl`, other content types, unknown procedures, wrong methods, HEAD) goes to tRPC's
// Fastify handler unchanged. Why: tRPC's handler turns each request into a Fetch `Request` (with
// Headers and AbortSignals), resolves a `Response` and streams it back through Fastify; the
// profile put that at well over half of a small call's time.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { callTRPCProcedure, getTRPCErrorFromUnknown, getTRPCErrorShape, transformTRPCResponse, TRPCError } from '@trpc/server';
import { fastifyRequestHandler, type FastifyHandlerOptions } from '@trpc/server/adapters/fastify';
import { getHTTPStatusCode } from '@trpc/server/http';
import type { AppRouter } from '../api/root-router.js';
import type { Context } from '../api/context.js';
import type { ApiMeta } from '../api/trpc.js';
import { closeAfterRefusal } from './authentication.js';
import { deprecationHeaders } from './deprecation.js';

export interface TrpcPluginOptions {
  router: AppRouter;
  createContext: (request: FastifyRequest, reply: FastifyReply) => Context;
}

type Procedure = { _def: { type: 'query' | 'mutation' | 'subscription'; meta?: ApiMeta } };

/** tRPC answers every call with these (resolveResponse). */
const TRPC_HEADERS = { vary: 'trpc-accept, accept', 'content-type': 'application/json' };

/** The media type of a Content-Type header, as tRPC compares it: lower case, no parameters. */
function mediaType(header: string | undefined): string | undefined {
  return header?.split(';', 1)[0]?.trim().toLowerCase();
}

export const trpcPlugin: FastifyPluginAsync<TrpcPluginOptions> = async (app, { router, createContext }) => {
  const procedures = router._def.procedures as unknown as Record<string, Procedure>;
  const config = router._def._config;

  /** A deprecated procedure announces it here too, with the same headers as on REST. */
  const headersFor = (paths: readonly string[] | undefined): Record<string, string> => {
    const deprecation = paths?.map((path) => procedures[path]?._def.meta?.deprecation).find(Boolean);
    return deprecation ? deprecationHeaders(deprecation) : {};
  };

  const trpcOptions = {
    router,
    createContext: ({ req, res }) => createContext(req, res),
    responseMeta: ({ paths }) => ({ headers: headersFor(paths) }),
    onError: ({ error, req }) => {
      if (error.code === 'INTERNAL_SERVER_ERROR') req.log.error({ err: error.cause ?? error }, 'procedure failed');
      if (error.code === 'SERVICE_UNAVAILABLE') req.log.warn({ err: error.cause ?? error }, 'database unavailable');
    },
  } satisfies FastifyHandlerOptions<AppRouter, FastifyRequest, FastifyReply>;

  /** The headers of a direct answer, per procedure: they never change, so they are built once. */
  const directHeaders = new Map(Object.keys(procedures).map((path) => [path, { ...TRPC_HEADERS, ...headersFor([path]) }]));

  /** The procedure a request can take the direct way to, or undefined for tRPC's handler. */
  function directProcedure(request: FastifyRequest, path: string): Procedure | undefined {
    const procedure = Object.hasOwn(procedures, path) ? procedures[path] : undefined;
    if (!procedure || request.headers['trpc-accept'] !== undefined || request.headers.accept?.includes('application/jsonl')) return undefined;
    const { batch } = request.query as Record<string, unknown>;
    if (batch !== undefined && batch !== '1') return undefined;
    if (procedure._def.type === 'query') {
      return request.method === 'GET' && request.headers['content-type'] === undefined ? procedure : undefined;
    }
    if (procedure._def.type === 'mutation') {
      return request.method === 'POST' && mediaType(request.headers['content-type']) === 'application/json' ? procedure : undefined;
    }
    return undefined;
  }

  async function answerDirectly(request: FastifyRequest, reply: FastifyReply, path: string, procedure: Procedure) {
    const type = procedure._def.type as 'query' | 'mutation';
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
      input = config.transformer.input.deserialize(parsed);
      return input;
    };

    let ctx: Context | undefined;
    let response;
    let errors: TRPCError[] = [];
    try {
      ctx = createContext(request, reply);
      const data = await callTRPCProcedure({ router, path, type, ctx, getRawInput, signal: undefined, batchIndex: 0 });
      response = { result: { data } };
    } catch (cause) {
      const error = getTRPCErrorFromUnknown(cause);
      trpcOptions.onError({ error, req: request, type, path, input, ctx });
      errors = [error];
      response = { error: getTRPCErrorShape({ config, error, type, path, input, ctx }) };
    }
    const body = batched ? [response] : response;
    return reply
      .code(getHTTPStatusCode([response], errors))
      .headers(directHeaders.get(path)!)
      .send(JSON.stringify(transformTRPCResponse(config, body)));
  }

  // As tRPC's Fastify plugin does: its handler reads JSON bodies as text, and multipart as a stream.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  app.removeContentTypeParser('multipart/form-data');
  app.addContentTypeParser('multipart/form-data', {}, (_request, body, done) => done(null, body));

  // The log names the procedures called (`/trpc/pets.list`, a batch: `/trpc/pets.list,pets.get`);
  // unknown names stay out of it: they are the caller's text.
  // A call without a valid key is answered here, before its body is read, and its connection
  // closed (every procedure needs a key; the middleware refuses before it looks at the input).
  app.addHook('onRequest', async (request, reply) => {
    const { path } = request.params as { path?: string };
    if (path?.split(',').every((name) => Object.hasOwn(procedures, name))) request.routePattern = `${app.prefix}/${path}`;
    if (request.identity || path === undefined) return;
    const procedure = directProcedure(request, path);
    if (!procedure) return;
    closeAfterRefusal(request, reply);
    return answerDirectly(request, reply, path, procedure);
  });

  app.all<{ Params: { path: string } }>('/:path', async (request, reply) => {
    const { path } = request.params;
    const procedure = directProcedure(request, path);
    if (procedure) return answerDirectly(request, reply, path, procedure);
    await fastifyRequestHandler({ ...trpcOptions, req: request, res: reply, path });
    return reply;
  });
};
