// One log line per request, written when it has been answered: request id and trace context (from
// the request's child logger, see `requestChildLogger`), method, route pattern, URL, status and
// duration. Fastify's default is two lines, one on arrival and one on completion, naming only the
// raw URL; a third of a small request's logging cost went on the first. Done as Fastify's
// LogController rather than hooks, so it costs no extra promise per request; the same moment
// feeds the metrics (src/http/request-metrics.ts). Headers are never logged, so neither is a key.
import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';
import { addTraceLogFields, traceContextFor, type TraceContext } from '../observability/trace-context.js';
import type { RequestRecorder } from './request-metrics.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * What the request was for, as a pattern: `/v1/pets/{petId}`, `/trpc/pets.list`. Set by the
     * surface that understood it; otherwise the Fastify route (`/healthz`), or null when none matched.
     */
    routePattern?: string;
  }
}

function routeOf(request: FastifyRequest): string | null {
  return request.routePattern ?? request.routeOptions.url ?? null;
}

class OneLinePerRequest extends LogController {
  constructor(private readonly recordRequest: RequestRecorder | null) {
    super();
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    this.recordRequest?.(request, reply);
    if (error) return super.requestCompleted(error, request, reply, {});
    request.log.info(
      {
        method: request.method,
        route: routeOf(request),
        url: request.url,
        statusCode: reply.statusCode,
        responseTimeMs: Math.round(reply.elapsedTime * 100) / 100,
      },
      'request completed',
    );
  }
}

/** The request log; `recordRequest` (the metrics) sees every answered request too, when given. */
export function requestLogController(recordRequest: RequestRecorder | null = null): LogController {
  return new OneLinePerRequest(recordRequest);
}

/** Where a request's trace context is kept between its logger's creation and its hooks. */
const TRACE = Symbol('traceContext');
type TracedMessage = IncomingMessage & { [TRACE]?: TraceContext };

/**
 * Fastify's `childLoggerFactory`: the request's logger carries its trace context (from the
 * caller's `traceparent`, or a new trace: src/observability/trace-context.ts) beside the request
 * id, so every line logged for the request, not only the last, can be joined with the trace.
 */
export function requestChildLogger<L extends FastifyBaseLogger>(
  logger: L,
  bindings: Bindings,
  options: ChildLoggerOptions,
  raw: IncomingMessage,
): L {
  const trace = traceContextFor(raw.headers.traceparent);
  (raw as TracedMessage)[TRACE] = trace;
  // Fastify makes `bindings` ({ reqId }) afresh for each request: the fields go straight into it.
  return logger.child(addTraceLogFields(bindings, trace), options) as L;
}

/** The trace context `requestChildLogger` made for this request. */
export function traceContextOf(request: FastifyRequest): TraceContext {
  return (request.raw as TracedMessage)[TRACE]!;
}
