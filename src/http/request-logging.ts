// One log line per request, written when it has been answered: request id and trace context,
// method, route pattern, URL, status, duration, the client's address, the API key's id, and why it
// was refused when it was (the reason recorded on the request). Fastify's default is two lines (arrival and
// completion) naming only the raw URL. Done as Fastify's LogController rather than hooks, so it
// costs no extra promise per request; the same moment feeds the metrics (call-pipeline.ts, requestRecorder).
// Headers are never logged, so neither is a key.
//
// A request's logger (`request.log`) is a pino child made only if something logs through it (an
// error, a warning); the completion line is written by the parent logger with the same fields
// first, so the line is the same either way (docs/benchmarks.md: a child per request was a
// measurable share of a small request).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Bindings, ChildLoggerOptions, LevelWithSilentOrString, LogFn } from 'pino';
import { looksLikeApiKey, redactCredentialParameters } from '../domain/api-key-shape.js';
import { clientAddress } from '../limits/client-address.js';
import { addTraceLogFields, traceContextFor, type TraceContext } from '../observability/trace-context.js';
import { newCall, routeOf, type RequestRecorder } from './call-pipeline.js';

class OneLinePerRequest extends LogController {
  constructor(private readonly recordRequest: RequestRecorder | null) {
    super();
  }

  /** Fastify reports every request here first, before routing and hooks: its decisions are born with it. */
  override incomingRequest(request: FastifyRequest): void {
    request.call = newCall(request.url);
  }

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    const elapsedMs = reply.elapsedTime; // read once: each read is a clock call
    this.recordRequest?.(request, reply, elapsedMs);
    if (error) return super.requestCompleted(error, request, reply, {});
    const fields: Record<string, unknown> = {
      method: request.method,
      route: routeOf(request),
      // Without the value of a credential query parameter (`?api_key=…`), whatever its shape; the
      // logger removes key-shaped text from every line (src/logger.ts). Here, not as a pino
      // serializer: one of those costs every line ~0.7 µs (bench/log-destination.ts).
      url: redactCredentialParameters(request.url),
      statusCode: reply.statusCode,
      responseTimeMs: Math.round(elapsedMs * 100) / 100,
      // Who: the client's address (TRUST_PROXY applied) and the key's id, never the key itself.
      client: clientAddress(request),
      keyId: request.call.caller?.identity?.keyId ?? null,
    };
    // Why it was refused, as recorded where that was decided (src/api/refusals.ts): `missing_key`, `per_key`…
    if (request.call.refusal !== null) fields.refused = request.call.refusal.reason;
    const log = request.log;
    if (log instanceof RequestLogger) log.completed(fields, 'request completed');
    else log.info(fields, 'request completed');
  }
}

/** The request log; `recordRequest` (the metrics) sees every answered request too, when given. */
export function requestLogController(recordRequest: RequestRecorder | null = null): LogController {
  return new OneLinePerRequest(recordRequest);
}

/**
 * A caller's request id (X-Request-Id, e.g. from a load balancer) is kept only when it is a short
 * token: it is echoed and written on every line of the request, so a long one would multiply the
 * log, and one with other characters (spaces, quotes) is not an id. Nor is an API key sent as one
 * (the log would redact it anyway: src/logger.ts): the shape is public, so refusing it tells a
 * caller nothing about which keys exist.
 */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Fastify's `genReqId`: the caller's X-Request-Id when it is a short token, otherwise a new UUID. */
export function requestIdFor(raw: IncomingMessage): string {
  const sent = raw.headers['x-request-id'];
  return typeof sent === 'string' && sent.length <= 128 && REQUEST_ID.test(sent) && !looksLikeApiKey(sent) ? sent : randomUUID();
}

/** Where a request's trace context is kept between its logger's creation and its hooks. */
const TRACE = Symbol('traceContext');
type TracedMessage = IncomingMessage & { [TRACE]?: TraceContext };

function log(method: LogFn, logger: FastifyBaseLogger, args: unknown[]): void {
  Reflect.apply(method, logger, args);
}

/**
 * A request's logger: `bindings` on every line, through a pino child made at the first line logged
 * with it, or, for the completion line alone, by the parent with the bindings as its first fields.
 */
class RequestLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
  ) {}

  private get logger(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.bindings));
  }

  get level(): LevelWithSilentOrString {
    return (this.#child ?? this.parent).level;
  }

  set level(level: LevelWithSilentOrString) {
    this.logger.level = level;
  }

  // Prototype methods, not arrow fields: nothing to allocate per request for lines never logged.
  fatal(...args: unknown[]): void {
    log(this.logger.fatal, this.logger, args);
  }
  error(...args: unknown[]): void {
    log(this.logger.error, this.logger, args);
  }
  warn(...args: unknown[]): void {
    log(this.logger.warn, this.logger, args);
  }
  info(...args: unknown[]): void {
    log(this.logger.info, this.logger, args);
  }
  debug(...args: unknown[]): void {
    log(this.logger.debug, this.logger, args);
  }
  trace(...args: unknown[]): void {
    log(this.logger.trace, this.logger, args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }

  /** The request's last line, at info. */
  completed(fields: Record<string, unknown>, message: string): void {
    if (this.#child) this.#child.info(fields, message);
    else this.parent.info({ ...this.bindings, ...fields }, message);
  }
}

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
  addTraceLogFields(bindings, trace);
  // A route's own log options (a level, serializers) need the real child.
  if (Object.keys(options).length > 0) return logger.child(bindings, options) as L;
  return new RequestLogger(logger, bindings) as unknown as L;
}

/** The trace context `requestChildLogger` made for this request. */
export function traceContextOf(request: FastifyRequest): TraceContext {
  return (request.raw as TracedMessage)[TRACE]!;
}
