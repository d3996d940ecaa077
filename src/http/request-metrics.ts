// What one answered request adds to the metrics (src/observability/metrics.ts), read from the
// request and its response once it has been sent; called by the request log's controller
// (src/http/request-logging.ts), so it costs no hook of its own.
//
// The refusals (401, 429, 503) are counted by the reason recorded where each was decided
// (`request.call.refusal`, src/http/call-pipeline.ts), never re-derived from the status; idempotent
// replays by their header.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ROUTE_LABELS, type ServiceMetrics, type Surface } from '../observability/metrics.js';
import { routeOf } from './call-pipeline.js';

/** HTTP methods kept as label values; anything else Node's parser lets through is `OTHER`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Called once a request is answered, with the time it took in milliseconds. */
export type RequestRecorder = (request: FastifyRequest, reply: FastifyReply, elapsedMs: number) => void;

export function requestRecorder(metrics: ServiceMetrics): RequestRecorder {
  /**
   * The route label: the procedure a /trpc request named (a batch: `batch`, and each of its calls
   * counted), or the route pattern (routeOf), never the URL: bounded either way.
   */
  function routeLabel(request: FastifyRequest): string {
    const { surface, procedures } = request.call;
    if (surface === 'trpc') {
      if (procedures === null) return ROUTE_LABELS.unmatched;
      if (procedures.length === 1) return procedures[0]!;
      for (const procedure of procedures) metrics.batchedCall(procedure);
      return ROUTE_LABELS.batch;
    }
    return routeOf(request) ?? ROUTE_LABELS.unmatched;
  }

  /** Refusals and replays, each in its own counter (see the top of this file). */
  function countOutcome(surface: Surface, request: FastifyRequest, reply: FastifyReply, status: number): void {
    const refusal = request.call.refusal;
    if (refusal !== null) {
      const reason = refusal.reason;
      if (reason === 'missing_key' || reason === 'invalid_key') metrics.authenticationFailed(surface, reason);
      else if (reason === 'auth_failures' || reason === 'per_key') metrics.rateLimitRefused(surface, reason);
      else if (reason === 'database_unavailable') metrics.databaseUnavailable(surface);
    } else if (status < 300 && request.method === 'POST' && reply.getHeader('idempotent-replayed') === 'true') {
      metrics.idempotentReplay(surface);
    }
  }

  return (request, reply, elapsedMs) => {
    const surface = request.call.surface;
    const status = reply.statusCode;
    metrics.observeRequest({
      surface,
      route: routeLabel(request),
      method: METHODS.has(request.method) ? request.method : 'OTHER',
      statusCode: status,
      durationSeconds: elapsedMs / 1000,
    });
    countOutcome(surface, request, reply, status);
  };
}
