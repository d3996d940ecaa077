// Builds the HTTP application: a configured Fastify instance that does not listen yet, so tests
// can `inject` into it or listen on a free port. src/main.ts is the entry that listens.
//
// A request's path: Fastify → authentication hook (src/http/authentication.ts) → the surface's
// plugin (/trpc: src/http/trpc-plugin.ts, /v1: src/http/rest-plugin.ts) → procedure
// (src/api/pets-router.ts) → repository (src/pets/pet-repository.ts) → src/db/sql.ts: on SQLite,
// better-sqlite3 connections of its own; on PostgreSQL, the pg pool Prisma's adapter also runs on.
// @see docs/architecture.md
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyError, type FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { appRouter, type AppRouter } from './api/root-router.js';
import { contextFactory, type Context, type CreateContext } from './api/context.js';
import { answerForClientError, answerForConnect, type ClientErrorAnswer } from './api/errors.js';
import { createApiKeyStore } from './auth/api-key-store.js';
import { createApiKeyVerifier } from './auth/api-keys.js';
import type { Config, TrustProxy } from './config.js';
import type { Database } from './db/database.js';
import { authentication, bearerChallenge } from './http/authentication.js';
import { corsPlugin } from './http/cors.js';
import { limitConnections, MAX_IN_FLIGHT_PER_CONNECTION, MAX_UNSENT_BYTES, type ConnectionCounts } from './http/connection-limits.js';
import { healthPlugin } from './http/health-plugin.js';
import { attachMetricsServer, metricsRoute } from './http/metrics-plugin.js';
import { requestChildLogger, requestIdFor, requestLogController, traceContextOf } from './http/request-logging.js';
import { API_TITLE, REST_BASE_PATH } from './http/openapi-document.js';
import { restPlugin } from './http/rest-plugin.js';
import { bodyEncodingError, continueWhenBodyIsRead } from './http/request-bodies.js';
import { methodsServedAnywhere, servedMethods } from './http/served-methods.js';
import { writeAtTurnEnd } from './http/turn-end-writes.js';
import { buildRestRoutes, deprecationHeadersAt } from './http/rest-routes.js';
import { MAX_PARAM_LENGTH, MAX_REQUEST_HEAD_BYTES } from './http/request-head-limits.js';
import {
  answerWriter,
  callPipeline,
  escapeUndecodablePath,
  requestRecorder,
  surfaceOf,
  TRPC_PREFIX,
  type CallDecision,
} from './http/call-pipeline.js';
import { rawHttpErrorResponse, RESPONSE_HEADERS, sendUnknownRoute, trpcErrorSenders } from './http/error-senders.js';
import { trpcPlugin } from './http/trpc-plugin.js';
import { createIdempotencyStore } from './idempotency/idempotency-store.js';
import { StorageHealth } from './db/storage-health.js';
import { createRequestLimits, describeRedisFault } from './limits/request-limiters.js';
import { databaseHealth as trackDatabase, redisTracker } from './observability/dependencies.js';
import { createServiceMetrics } from './observability/metrics.js';
import { formatTraceparent } from './observability/trace-context.js';
import { createPetRepository } from './pets/pet-repository.js';

export type AppConfig = Pick<
  Config,
  | 'apiKeys'
  | 'bodyLimitBytes'
  | 'rateLimitPerMinute'
  | 'authFailuresPerMinute'
  | 'trpcMaxBatchCalls'
  | 'idempotencyTtlMs'
  | 'corsOrigins'
  | 'trustProxy'
  | 'requestTimeoutMs'
  | 'headersTimeoutMs'
  | 'idleTimeoutMs'
  | 'sendTimeoutMs'
  | 'maxConnections'
  | 'maxConnectionsPerAddress'
  | 'redisUrl'
  | 'metricsEnabled'
  | 'metricsPort'
  | 'metricsHost'
  | 'build'
>;

declare module 'fastify' {
  interface FastifyInstance {
    /** Starts the stop's drain: /readyz 503, `Connection: close` on every answer (see buildApp). */
    beginDraining(): void;
  }
}

export interface AppDependencies {
  config: AppConfig;
  database: Database;
  logger: Logger;
  /** The procedures served on both surfaces; `appRouter` unless a test serves a larger one. */
  router?: AppRouter;
}

/**
 * TRUST_PROXY as Fastify takes it. A hop count becomes a function: Fastify 5 turns a number into
 * "trust nothing" (it cannot tell the proxies from a client that connects directly); ours trusts
 * exactly the last `hops` addresses, which is right when every request comes through them.
 */
function fastifyTrustProxy(trustProxy: TrustProxy) {
  if (typeof trustProxy === 'number') return (_address: string, hop: number) => hop < trustProxy;
  return trustProxy;
}

/**
 * How often Node looks for requests past their header or request timeout (its default is 30 s,
 * which would let a slow client hold a connection that much longer than the timeout).
 */
function connectionsCheckingInterval(config: AppConfig): number {
  return Math.max(100, Math.min(1_000, Math.floor(config.headersTimeoutMs / 4)));
}

/**
 * What a procedure receives, per request, on either surface (src/api/context.ts). Exported so that
 * test/trpc-wire.test.ts can give tRPC's stock Fastify adapter exactly the same context.
 */
export function createContextFactory(
  config: AppConfig,
  database: Database,
  { keyRateLimiter, storage }: { keyRateLimiter: Context['keyRateLimiter']; storage: StorageHealth },
): CreateContext<FastifyReply> {
  const pets = createPetRepository(database.sql);
  const idempotency = createIdempotencyStore(database.sql, config.idempotencyTtlMs);
  return contextFactory({ pets, idempotency, keyRateLimiter, storage }, answerWriter);
}

export async function buildApp({ config, database, logger, router = appRouter }: AppDependencies) {
  // The dependencies' outages, one line each way (src/observability/dependencies.ts).
  const databaseHealth = trackDatabase(database, logger);
  const redisHealth = config.redisUrl ? redisTracker(config.redisUrl, logger, describeRedisFault) : null;
  const trackers = redisHealth ? [databaseHealth.tracker, redisHealth] : [databaseHealth.tracker];
  // Prometheus metrics (src/observability/metrics.ts), filled as each request is answered.
  let connectionCounts: () => ConnectionCounts = () => ({ open: 0, refused: 0, reclaimed: 0, sendTimeouts: 0, unsentReclaimed: 0 });
  const metrics = config.metricsEnabled
    ? createServiceMetrics({
        poolStats: database.poolStats,
        connections: () => connectionCounts(),
        dependencies: () => trackers.map((tracker) => tracker.state()),
        build: config.build,
      })
    : null;
  // Under /trpc, what Fastify or Node refuse is answered in tRPC's error shape, elsewhere in the envelope.
  const trpcErrors = trpcErrorSenders(router);
  // What both surfaces share: the run of a call and the answer to Fastify's errors, each failure logged once.
  const pipeline = callPipeline(router, databaseHealth);
  // The router's REST routes: the parser's answers on an operation's path carry its deprecation
  // headers, as the surface's do; CONNECT's Allow and CORS's methods are the methods served somewhere.
  const restRoutes = buildRestRoutes(router);
  const operationHeaders = ({ method, target }: ClientErrorAnswer) =>
    target.startsWith(`${REST_BASE_PATH}/`)
      ? deprecationHeadersAt(restRoutes, method, target.slice(REST_BASE_PATH.length).split('?')[0]!)
      : {};
  const app = Fastify({
    loggerInstance: logger,
    // One line per request, with the route pattern (src/http/request-logging.ts); the metrics are
    // counted at the same moment.
    logController: requestLogController(metrics && requestRecorder(metrics)),
    // Each request's logger carries its W3C trace context beside the request id.
    childLoggerFactory: requestChildLogger,
    bodyLimit: config.bodyLimitBytes,
    // tRPC's batch path is one long parameter; the head's limit bounds both (src/http/request-head-limits.ts).
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    http: {
      maxHeaderSize: MAX_REQUEST_HEAD_BYTES,
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: connectionsCheckingInterval(config),
    },
    trustProxy: fastifyTrustProxy(config.trustProxy),
    // Slow clients (docs/security.md, "Slow clients"): the whole request, its headers, and any
    // silence on the connection are bounded; past them the client gets 408 where HTTP allows
    // one, and the connection is closed.
    requestTimeout: config.requestTimeoutMs,
    connectionTimeout: config.idleTimeoutMs,
    keepAliveTimeout: config.idleTimeoutMs,
    // A caller's X-Request-Id (e.g. from a load balancer) names the request in our logs too, when
    // it is a short token; otherwise a new id (src/http/request-logging.ts).
    requestIdHeader: false,
    genReqId: requestIdFor,
    // While shutting down, requests already on open connections are served, not refused with 503.
    return503OnClosing: false,
    // A path with an undecodable percent-encoding routes like any other, its encoding kept as sent.
    rewriteUrl: escapeUndecodablePath,
    // Errors Fastify raises before routing.
    // They skip the hooks, so the headers every response carries are set here too.
    frameworkErrors: (error, request, reply) => {
      reply.headers(RESPONSE_HEADERS).header('x-request-id', request.id);
      pipeline.fastifyError(error, request, reply);
    },
    clientErrorHandler: (error, socket) => {
      if (!socket.writable) return void socket.destroy();
      const answer = answerForClientError(error);
      socket.end(
        surfaceOf(answer.target) === 'trpc' ? trpcErrors.rawResponse(answer) : rawHttpErrorResponse(answer, operationHeaders(answer)),
      );
    },
  });

  // Open connections bounded, in total and per address; what each holds too (pipelined requests,
  // unsent answers, answers that stop moving).
  connectionCounts = limitConnections(app.server, {
    total: config.maxConnections,
    perAddress: config.maxConnectionsPerAddress,
    maxInFlightPerConnection: MAX_IN_FLIGHT_PER_CONNECTION,
    sendTimeoutMs: config.sendTimeoutMs,
    maxUnsentBytes: MAX_UNSENT_BYTES,
  });

  // `100 Continue` only when the body is read: not before a refusal (src/http/request-bodies.ts).
  continueWhenBodyIsRead(app.server);

  const servedAnywhere = methodsServedAnywhere(restRoutes);

  // CONNECT never reaches Fastify: Node gives it a socket of its own, and without a listener
  // drops it unanswered. Answered 405 in the target's shape, then closed.
  app.server.on('connect', (request: IncomingMessage, socket: Socket) => {
    const answer = answerForConnect(request.url ?? '', servedAnywhere);
    socket.on('error', () => {});
    socket.end(surfaceOf(answer.target) === 'trpc' ? trpcErrors.rawResponse(answer) : rawHttpErrorResponse(answer));
  });

  const limits = await createRequestLimits(config, redisHealth ?? undefined);
  app.addHook('onClose', () => limits.close());
  app.addHook('onClose', async () => trackers.forEach((tracker) => tracker.close()));
  await limits.ready();
  const storage = new StorageHealth();
  const createContext = createContextFactory(config, database, { keyRateLimiter: limits.perKey, storage });

  await app.register(authentication, {
    verifier: createApiKeyVerifier({
      envKeys: config.apiKeys,
      store: createApiKeyStore(database.prisma, {
        sqlite: database.sqlite,
        onBookkeepingError: (error) => logger.warn({ err: error }, 'could not note the use of an API key (last_used_at)'),
      }),
    }),
    failureLimiter: limits.authFailures,
    databaseHealth,
  });

  await app.register(corsPlugin, { origins: config.corsOrigins, methods: servedAnywhere, sendTrpcError: trpcErrors.send });

  // Every request has the field from the start (one object shape for V8); its value is made when the
  // request arrives (src/http/call-pipeline.ts, CallDecision).
  app.decorateRequest<CallDecision | null>('call', null);

  // The stop's drain (docs/operations.md, "Stopping behind a load balancer"): from the signal
  // (src/main.ts calls beginDraining) to the exit, /readyz answers 503 so that balancers stop
  // sending, while every request is still served, each answer with `Connection: close`.
  let draining = false;
  app.decorate('beginDraining', () => {
    draining = true;
  });
  app.addHook('preClose', async () => {
    draining = true;
  });
  // Callback-style hooks: an async one costs a promise per request (docs/benchmarks.md).
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(RESPONSE_HEADERS);
    reply.header('x-request-id', request.id);
    // The caller's trace, continued with this service's span (src/observability/trace-context.ts).
    reply.header('traceparent', formatTraceparent(traceContextOf(request)));
    // A compressed body from a caller with a key: 415 before it is read (src/http/request-bodies.ts),
    // in the surface's shape (its error handler). Without a key the surface answers 401 first.
    if (request.headers['content-encoding'] !== undefined && request.call.caller?.identity) {
      const refusal = bodyEncodingError(request.method, request.headers);
      if (refusal !== null) {
        reply.header('accept-encoding', 'identity').header('connection', 'close');
        return done(refusal);
      }
    }
    done();
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    // Every 401, on either surface, carries the Bearer challenge. tRPC's handler hands Fastify a
    // Response, whose status Fastify copies to the reply only after this hook.
    if (reply.statusCode === 401 || (payload instanceof Response && payload.status === 401)) {
      reply.header('www-authenticate', bearerChallenge(request.call.caller));
    }
    // Tell keep-alive clients not to reuse a connection that is about to close. A request refused for
    // want of a valid key ends its connection too (docs/security.md): a client without one has
    // nothing to keep it for, and a flood of keyless requests pays a new connection for each.
    if (draining || (request.call.caller?.refusal && request.call.refusal !== null)) reply.header('connection', 'close');
    // Every answer of this turn goes out at its end, together (src/http/turn-end-writes.ts).
    writeAtTurnEnd(reply, payload, done);
  });
  // Errors Fastify raises on any route (bad JSON, 413, 415), in the request's surface's shape.
  app.setErrorHandler<FastifyError>(pipeline.fastifyError);
  // Outside /v1 and /trpc (each answers its own): a path served with other methods is 405 with Allow.
  app.setNotFoundHandler((request, reply) => sendUnknownRoute(request, reply, servedMethods(app, request.url.split('?')[0]!)));
  // `/` names no resource, but whoever opens it is looking for the API: where its reference and
  // document are. Public (they are), no data.
  app.get('/', (_request, reply) =>
    reply.send({ name: API_TITLE, docs: `${REST_BASE_PATH}/docs`, openapi: `${REST_BASE_PATH}/openapi.json` }),
  );

  // GET /metrics: here, or on a server of its own when METRICS_PORT is set (src/http/metrics-plugin.ts).
  const metricsServer =
    metrics && config.metricsPort !== null
      ? await attachMetricsServer(app, { registry: metrics.registry, host: config.metricsHost, port: config.metricsPort, logger })
      : null;
  app.decorate('metricsServer', metricsServer);
  if (metrics && !metricsServer) await app.register(metricsRoute, { registry: metrics.registry });
  await app.register(healthPlugin, { database, storage, draining: () => draining, databaseHealth });
  await app.register(trpcPlugin, {
    prefix: TRPC_PREFIX,
    router,
    createContext,
    keyRateLimiter: limits.perKey,
    maxBatchCalls: config.trpcMaxBatchCalls,
    pipeline,
  });
  await app.register(restPlugin, { prefix: REST_BASE_PATH, router, createContext, pipeline });
  return app;
}

export type App = Awaited<ReturnType<typeof buildApp>>;
