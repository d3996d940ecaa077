// Builds the HTTP application: a configured Fastify instance that does not listen yet, so tests
// can `inject` into it; src/main.ts listens. @see docs/architecture.md "A request, top to bottom"
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyError, type FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { appRouter, type AppRouter } from './api/root-router.js';
import { contextFactory, type Context, type CreateContext } from './api/trpc.js';
import { answerForClientError, answerForConnect, type ClientErrorAnswer } from './api/errors.js';
import { createApiKeyStore } from './auth/api-key-store.js';
import { createApiKeyVerifier } from './auth/api-keys.js';
import type { Config, TrustProxy } from './config.js';
import type { Database } from './db/database.js';
import { limitConnections, MAX_IN_FLIGHT_PER_CONNECTION, MAX_UNSENT_BYTES, type ConnectionCounts } from './http/connections.js';
import { healthPlugin } from './http/health-plugin.js';
import { attachMetricsServer, metricsRoute } from './http/metrics-plugin.js';
import { API_TITLE } from './http/openapi-document.js';
import { docsPlugin } from './http/docs-plugin.js';
import { buildRestRoutes, deprecationHeadersAt, restPlugin } from './http/rest-plugin.js';
import { continueWhenBodyIsRead } from './http/request-bodies.js';
import { methodsServedAnywhere, servedMethods } from './http/served-methods.js';
import { MAX_PARAM_LENGTH, MAX_REQUEST_HEAD_BYTES } from './http/request-head-limits.js';
import {
  admission,
  answerWriter,
  callPipeline,
  rawHttpErrorResponse,
  RESPONSE_HEADERS,
  sendUnknownRoute,
  trpcErrorSenders,
} from './http/call-pipeline.js';
import {
  escapeUndecodablePath,
  requestChildLogger,
  requestIdFor,
  requestLogController,
  requestRecorder,
  REST_BASE_PATH,
  surfaceOf,
  TRPC_PREFIX,
  type CallDecision,
} from './http/request-record.js';
import { trpcPlugin } from './http/trpc-plugin.js';
import { createIdempotencyStore } from './idempotency/idempotency-store.js';
import { StorageHealth } from './db/storage-health.js';
import { createRequestLimits, describeRedisFault } from './limits/request-limiters.js';
import { databaseHealth as trackDatabase, redisTracker } from './observability/dependencies.js';
import { createServiceMetrics } from './observability/metrics.js';
import { createPetRepository } from './db/sql.js';

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

export interface AppDependencies {
  config: AppConfig;
  database: Database;
  logger: Logger;
  /** The procedures served on both surfaces; `appRouter` unless a test serves a larger one. */
  router?: AppRouter;
}

/**
 * TRUST_PROXY as Fastify takes it: a hop count becomes a function trusting exactly the last `hops`
 * addresses, where Fastify 5 turns a number into "trust nothing".
 */
function fastifyTrustProxy(trustProxy: TrustProxy) {
  if (typeof trustProxy === 'number') return (_address: string, hop: number) => hop < trustProxy;
  return trustProxy;
}

/** How often Node looks for requests past their timeouts (its default, 30 s, would let a slow client overstay). */
function connectionsCheckingInterval(config: AppConfig): number {
  return Math.max(100, Math.min(1_000, Math.floor(config.headersTimeoutMs / 4)));
}

/** The per-request context of both surfaces; exported for test/trpc-wire.test.ts's stock tRPC adapter. */
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
  const databaseHealth = trackDatabase(database, logger);
  const redisHealth = config.redisUrl ? redisTracker(config.redisUrl, logger, describeRedisFault) : null;
  const trackers = redisHealth ? [databaseHealth.tracker, redisHealth] : [databaseHealth.tracker];
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
  // What both surfaces share: the run of a call and the answer to Fastify's errors.
  const pipeline = callPipeline(router, databaseHealth);
  // Node's parser's refusals on an operation's path carry its deprecation headers, as the surface's do.
  const restRoutes = buildRestRoutes(router);
  const operationHeaders = ({ method, target }: ClientErrorAnswer) =>
    target.startsWith(`${REST_BASE_PATH}/`)
      ? deprecationHeadersAt(restRoutes, method, target.slice(REST_BASE_PATH.length).split('?')[0]!)
      : {};
  const app = Fastify({
    loggerInstance: logger,
    // One line per request (src/http/request-record.ts); the metrics are counted at the same moment.
    logController: requestLogController(metrics && requestRecorder(metrics)),
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
    // Slow clients: docs/security.md, "Slow clients".
    requestTimeout: config.requestTimeoutMs,
    connectionTimeout: config.idleTimeoutMs,
    keepAliveTimeout: config.idleTimeoutMs,
    // A caller's short X-Request-Id is kept, else a new id (src/http/request-record.ts).
    requestIdHeader: false,
    genReqId: requestIdFor,
    // While shutting down, requests already on open connections are served, not refused with 503.
    return503OnClosing: false,
    // A path with an undecodable percent-encoding routes like any other, its encoding kept as sent.
    rewriteUrl: escapeUndecodablePath,
    // Errors Fastify raises before routing skip the hooks: the headers every response carries are set here too.
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

  // CONNECT never reaches Fastify: without a listener Node drops it unanswered. 405, then closed.
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

  // Every request has the field from the start: one object shape for V8.
  app.decorateRequest<CallDecision | null>('call', null);

  await app.register(admission, {
    authentication: {
      verifier: createApiKeyVerifier({
        envKeys: config.apiKeys,
        store: createApiKeyStore(database.prisma, {
          sqlite: database.sqlite,
          onBookkeepingError: (error) => logger.warn({ err: error }, 'could not note the use of an API key (last_used_at)'),
        }),
      }),
      failureLimiter: limits.authFailures,
      databaseHealth,
    },
    cors: { origins: config.corsOrigins, methods: servedAnywhere, sendTrpcError: trpcErrors.send },
  });
  // Errors Fastify raises on any route (bad JSON, 413, 415), in the request's surface's shape.
  app.setErrorHandler<FastifyError>(pipeline.fastifyError);
  // Outside /v1 and /trpc (each answers its own): a path served with other methods is 405 with Allow.
  app.setNotFoundHandler((request, reply) => sendUnknownRoute(request, reply, servedMethods(app, request.url.split('?')[0]!)));
  // `/` names no resource: it points at the API's reference and document (public, no data).
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
  await app.register(healthPlugin, { database, storage, draining: () => app.isDraining(), databaseHealth });
  await app.register(trpcPlugin, {
    prefix: TRPC_PREFIX,
    router,
    createContext,
    keyRateLimiter: limits.perKey,
    maxBatchCalls: config.trpcMaxBatchCalls,
    pipeline,
  });
  await app.register(restPlugin, { prefix: REST_BASE_PATH, routes: restRoutes, createContext, keyRateLimiter: limits.perKey, pipeline });
  await app.register(docsPlugin, { prefix: REST_BASE_PATH, router, routes: restRoutes });
  return app;
}

export type App = Awaited<ReturnType<typeof buildApp>>;
