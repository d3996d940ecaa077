// One log line per request, once it is answered (as Fastify's LogController: no hook, no promise):
// ids and trace, route pattern, URL, status, duration, client address, key id, why it was refused.
// Headers are never logged, so neither is a key. The same moment feeds the metrics (requestRecorder).
// `request.log` makes its pino child only if something else logs: docs/architecture.md ("departures").
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
      // Without a credential query parameter's value, whatever its shape (src/logger.ts redacts
      // key-shaped text). Here, not as a pino serializer, which would cost every line.
      url: redactCredentialParameters(request.url),
      statusCode: reply.statusCode,
      responseTimeMs: Math.round(elapsedMs * 100) / 100,
      client: clientAddress(request),
      keyId: request.call.caller?.identity?.keyId ?? null,
    };
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

/** A caller's X-Request-Id is kept only as a short token (it is on every line of the request), never one shaped like a key. */
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

/** A request's logger: its pino child made at the first line logged; a completion line alone is the parent's, `bindings` first. */
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

  completed(fields: Record<string, unknown>, message: string): void {
    if (this.#child) this.#child.info(fields, message);
    else this.parent.info({ ...this.bindings, ...fields }, message);
  }
}

/** Fastify's `childLoggerFactory`: every line of a request carries its trace context beside its id. */
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

export function traceContextOf(request: FastifyRequest): TraceContext {
  return (request.raw as TracedMessage)[TRACE]!;
}
