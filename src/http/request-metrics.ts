// What one answered request adds to the metrics (src/observability/metrics.ts), read from the
// request and its response once it has been sent; called by the request log's controller
// (src/http/request-logging.ts), so it costs no hook of its own.
//
// The refusals (401, 429, 503) are counted by the reason recorded on the request where each was
// decided (`request.refusal`, src/api/refusals.ts), never re-derived from the status; idempotent
// replays by their header.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ROUTE_LABELS, type ServiceMetrics, type Surface } from '../observability/metrics.js';

export interface SurfacePrefixes {
  /** The REST surface's prefix, e.g. `/v1`. */
  rest: string;
  /** The tRPC surface's prefix, e.g. `/trpc`. */
  trpc: string;
}

/** HTTP methods kept as label values; anything else Node's parser lets through is `OTHER`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Called once a request is answered, with the time it took in milliseconds. */
export type RequestRecorder = (request: FastifyRequest, reply: FastifyReply, elapsedMs: number) => void;

export function requestRecorder(metrics: ServiceMetrics, prefixes: SurfacePrefixes): RequestRecorder {
  const restPrefix = `${prefixes.rest}/`;
  const trpcPrefix = `${prefixes.trpc}/`;

  function surfaceOf(path: string): Surface {
    if (path.startsWith(restPrefix)) return 'rest';
    if (path.startsWith(trpcPrefix)) return 'trpc';
    return 'other';
  }

  /**
   * The route label: a pattern the surfaces set (`request.routePattern`) or the Fastify route, never
   * the URL. tRPC's pattern `/trpc/pets.list` becomes the procedure name; it is only set when every
   * procedure named is a real one, so it is bounded too.
   */
  function routeOf(surface: Surface, request: FastifyRequest): string {
    const pattern = request.routePattern;
    if (surface === 'trpc') {
      if (pattern === undefined) return ROUTE_LABELS.unmatched;
      const procedures = pattern.slice(trpcPrefix.length);
      if (!procedures.includes(',')) return procedures;
      for (const procedure of procedures.split(',')) metrics.batchedCall(procedure);
      return ROUTE_LABELS.batch;
    }
    return pattern ?? request.routeOptions.url ?? ROUTE_LABELS.unmatched;
  }

  /** Refusals and replays, each in its own counter (see the top of this file). */
  function countOutcome(surface: Surface, request: FastifyRequest, reply: FastifyReply, status: number): void {
    const refusal = request.refusal;
    if (refusal !== null) {
      const reason = refusal.reason;
      if (reason === 'missing_key' || reason === 'invalid_key') metrics.authenticationFailed(surface, reason);
      else if (reason === 'auth_failures' || reason === 'per_key') metrics.rateLimitRefused(surface, reason);
      else if (reason === 'database_unavailable') metrics.databaseUnavailable(surface);
    } else if (status === 503) {
      metrics.databaseUnavailable(surface); // /readyz failing (health-plugin.ts), which refuses nothing
    } else if (status < 300 && request.method === 'POST' && reply.getHeader('idempotent-replayed') === 'true') {
      metrics.idempotentReplay(surface);
    }
  }

  return (request, reply, elapsedMs) => {
    const pattern = request.routePattern ?? request.routeOptions.url;
    const surface = surfaceOf(pattern ?? request.url);
    const status = reply.statusCode;
    metrics.observeRequest({
      surface,
      route: routeOf(surface, request),
      method: METHODS.has(request.method) ? request.method : 'OTHER',
      statusCode: status,
      durationSeconds: elapsedMs / 1000,
    });
    countOutcome(surface, request, reply, status);
  };
}
