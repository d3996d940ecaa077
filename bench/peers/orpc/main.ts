// THE oRPC PEER, NOT THE SERVICE. What a team would write with oRPC instead of this service: the
// REST list, create and get of the same contract with oRPC's OpenAPIHandler on node:http (its node
// adapter) under /v1, and the same procedures over oRPC's own RPC protocol (RPCHandler) under
// /rpc, on SQLite (bench/peers/sqlite-pets.ts), the way oRPC's documentation teaches: procedures
// with zod input and output schemas, output validation on (the library's default), the bearer
// API-key check as middleware with the service's own verifier (router.ts), the error envelope
// `{ code, message, status }` through the handler's customErrorResponseBodyEncoder, validation
// messages through a client interceptor (oRPC's "Validation Errors" page), one pino line per
// request. No metrics, rate limits or trace context: the service does more per request. Started by
// bench/peers.ts with PEER_PORT, PEER_DB (a SQLite file), PEER_MIGRATIONS (the service's SQLite
// migrations folder) and API_KEYS.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { OpenAPIHandler } from '@orpc/openapi/node';
import { onError, ORPCError, ValidationError } from '@orpc/server';
import { RPCHandler } from '@orpc/server/node';
import { ResponseHeadersPlugin } from '@orpc/server/plugins';
import pino from 'pino';
import { createApiKeyVerifier } from '../../../src/auth/api-keys.js';
import { issuesSentence } from '../peer-inputs.js';
import { openDatabase, petsStore } from '../sqlite-pets.js';
import { createRouter } from './router.js';

const { PEER_PORT, PEER_DB, PEER_MIGRATIONS } = process.env;
const port = Number(PEER_PORT);
if (!Number.isInteger(port) || !PEER_DB || !PEER_MIGRATIONS) throw new Error('PEER_PORT, PEER_DB and PEER_MIGRATIONS are required');

const pets = petsStore(openDatabase(PEER_DB, PEER_MIGRATIONS));
const verifier = createApiKeyVerifier({ envKeys: (process.env.API_KEYS ?? '').split(','), store: pets });
const router = createRouter(pets, verifier);

/** Input validation failures as a 400 whose message names each issue, as the service words them. */
function validationMessages(error: unknown): void {
  if (error instanceof ORPCError && error.code === 'BAD_REQUEST' && error.cause instanceof ValidationError) {
    throw new ORPCError('BAD_REQUEST', { message: issuesSentence(error.cause.issues), cause: error.cause });
  }
}

const openApi = new OpenAPIHandler(router, {
  plugins: [new ResponseHeadersPlugin()],
  clientInterceptors: [onError(validationMessages)],
  customErrorResponseBodyEncoder: (error) => ({ code: error.code, message: error.message, status: error.status }),
});
// No ResponseHeadersPlugin here: only the REST get sets headers, and the list is all RPC serves in the bench.
const rpc = new RPCHandler(router, { clientInterceptors: [onError(validationMessages)] });

// pino to stdout, one line per request once it is answered (what Fastify's logger writes for NestJS).
const logger = pino({ level: 'info' });
let requestCount = 0;

async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const started = performance.now();
  const context = { headers: req.headers };
  try {
    const { matched } = req.url?.startsWith('/rpc/')
      ? await rpc.handle(req, res, { prefix: '/rpc', context })
      : await openApi.handle(req, res, { prefix: '/v1', context });
    if (!matched) {
      const body = JSON.stringify({ code: 'NOT_FOUND', message: `No such resource: ${req.method} ${req.url}`, status: 404 });
      res.writeHead(404, { 'content-type': 'application/json' }).end(body);
    }
  } finally {
    logger.info(
      {
        reqId: `req-${++requestCount}`,
        req: { method: req.method, url: req.url },
        res: { statusCode: res.statusCode },
        responseTime: performance.now() - started,
      },
      'request completed',
    );
  }
}

const server = createServer((req, res) => void serve(req, res));
server.listen(port, '127.0.0.1');
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
