// A request's record, `request.call`: born at its arrival (the log controller's `incomingRequest`) with
// the surface its target is under, filled by each step where a fact is first known, and read once it is
// answered by its one log line and the metrics (requestRecorder): no decision is re-derived from the
// status. Also what identifies a request on every line: its id, its W3C trace context and its client
// address. Headers are never logged, so neither is a key. @see docs/observability.md
import { randomFillSync, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import ipaddr from 'ipaddr.js';
import type { Bindings, ChildLoggerOptions, LevelWithSilentOrString, LogFn, Logger } from 'pino';
import type { Caller, Refusal } from '../api/refusals.js';
import type { ProcedureInfo } from '../api/trpc-internals.js';
import { looksLikeApiKey } from '../domain/api-key-shape.js';
import { plainInfoWriter, redactCredentialParameters } from '../logger.js';
import type { LimitDecision } from '../limits/fixed-window-limiter.js';
import { ROUTE_LABELS, type ServiceMetrics, type Surface } from '../observability/metrics.js';

export const TRPC_PREFIX = '/trpc';
export const REST_BASE_PATH = '/v1';

/** How /trpc classified a request from its head (trpc-plugin.ts, classify). */
export interface TrpcRequestKind {
  /** `none`: tRPC answers without running a call; `call`: one call; `batch`: several calls, or a stream. */
  readonly kind: 'none' | 'call' | 'batch';
  readonly batched: boolean;
  readonly procedure: ProcedureInfo | undefined;
  /** The direct way may answer it (`call` only; unless the body starts with a byte order mark). */
  readonly direct: boolean;
}

/** What was decided about one request, by the step that decided it. */
export interface CallDecision {
  readonly surface: Surface;
  /** What it asked for, as a pattern (`/v1/pets/{petId}`, `/trpc/pets.list`); null: the Fastify route's, if any. */
  route: string | null;
  /** The procedures a /trpc request named, each a real one (a batch: several); null elsewhere. */
  procedures: readonly string[] | null;
  /** How /trpc classified it from its head (trpc-plugin.ts); null elsewhere. */
  trpc: TrpcRequestKind | null;
  /** Who is calling (call-pipeline.ts, admission); null only when Fastify refused the request before its hooks. */
  caller: Caller | null;
  budget: LimitDecision | null;
  refusal: Refusal | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    call: CallDecision;
  }
}

function isUnder(target: string, prefix: string): boolean {
  if (!target.startsWith(prefix)) return false;
  const next = target[prefix.length];
  return next === undefined || next === '/' || next === '?';
}

/** The surface a request target is under: the one place that tells /trpc from /v1 from the rest. */
export function surfaceOf(target: string): Surface {
  if (isUnder(target, TRPC_PREFIX)) return 'trpc';
  if (isUnder(target, REST_BASE_PATH)) return 'rest';
  return 'other';
}

/** Whether a percent-encoded text decodes (decodeURIComponent): the one test of an encoding's validity. */
export function decodable(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Fastify's `rewriteUrl`. Its router refuses a path nothing can decode (`%ZZ`, bytes not UTF-8) with 400 before any
 * hook, so before the key check; its `%`s are escaped as `%25` instead, and it routes like any other.
 */
export function escapeUndecodablePath({ url = '/' }: { url?: string }): string {
  const queryStart = url.indexOf('?');
  const path = queryStart === -1 ? url : url.slice(0, queryStart);
  return !path.includes('%') || decodable(path) ? url : path.replaceAll('%', '%25') + url.slice(path.length);
}

function newCall(url: string): CallDecision {
  return { surface: surfaceOf(url), route: null, procedures: null, trpc: null, caller: null, budget: null, refusal: null };
}

/** The route a request was for, for the log and the metrics: the surface's pattern, else the Fastify route, else null. */
function routeOf(request: FastifyRequest): string | null {
  return request.call.route ?? request.routeOptions.url ?? null;
}

// What one answered request adds to the metrics, read from its decisions; called by the request
// log controller below, so it costs no hook of its own.

/** HTTP methods kept as label values; anything else Node's parser lets through is `OTHER`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export type RequestRecorder = (request: FastifyRequest, reply: FastifyReply, elapsedMs: number) => void;

export function requestRecorder(metrics: ServiceMetrics): RequestRecorder {
  /** The procedure a /trpc request named (a batch: `batch`, each call counted), or the route pattern: never the URL. */
  function routeLabel(request: FastifyRequest): string {
    const { surface, procedures } = request.call;
    if (surface === 'trpc') {
      if (procedures === null) return ROUTE_LABELS.unmatched;
      if (procedures.length === 1) return procedures[0]!;
      for (const procedure of procedures) metrics.batchedCalls.inc({ procedure });
      return ROUTE_LABELS.batch;
    }
    return routeOf(request) ?? ROUTE_LABELS.unmatched;
  }

  /** Refusals by the reason recorded where they were decided; idempotent replays by their header. */
  function countOutcome(surface: Surface, request: FastifyRequest, reply: FastifyReply, status: number): void {
    const refusal = request.call.refusal;
    if (refusal !== null) {
      const reason = refusal.reason;
      if (reason === 'missing_key' || reason === 'invalid_key') metrics.authenticationFailures.inc({ surface, reason });
      else if (reason === 'auth_failures' || reason === 'per_key') metrics.rateLimitRefusals.inc({ surface, limit: reason });
      else if (reason === 'database_unavailable') metrics.databaseUnavailable.inc({ surface });
    } else if (status < 300 && request.method === 'POST' && reply.getHeader('idempotent-replayed') === 'true') {
      metrics.idempotentReplays.inc({ surface });
    }
  }

  return (request, reply, elapsedMs) => {
    const surface = request.call.surface;
    const status = reply.statusCode;
    metrics.duration.observe(
      { surface, route: routeLabel(request), method: METHODS.has(request.method) ? request.method : 'OTHER', status_code: status },
      elapsedMs / 1000,
    );
    countOutcome(surface, request, reply, status);
  };
}

// The log line.
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
    if (this.#child) return this.#child.info(fields, message);
    const write = plainInfoWriter(this.parent as unknown as Logger);
    if (write) write({ ...this.bindings, ...fields, msg: message });
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

// W3C Trace Context: the caller's `traceparent` continued with a new span, or a new unsampled trace;
// into every log line and the response. @see docs/observability.md "Trace context"
export interface TraceContext {
  traceId: string;
  spanId: string;
  /** Undefined when this request started the trace. */
  parentSpanId: string | undefined;
  flags: string;
}

/** A later version may append fields after a dash, which a version-00 reader ignores (spec 3.2.4). */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);

/** Passes on sampled (0x01) and Level 2's random trace id (0x02); clears the rest. */
function knownFlags(flags: string): string {
  return (Number.parseInt(flags, 16) & 0x03).toString(16).padStart(2, '0');
}

function parseTraceparent(header: string | string[] | undefined): { traceId: string; parentSpanId: string; flags: string } | null {
  if (typeof header !== 'string' || header.length > 512) return null;
  const match = TRACEPARENT.exec(header);
  if (!match) return null;
  const [, version, traceId, parentSpanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE_ID || parentSpanId === ZERO_SPAN_ID) return null;
  return { traceId, parentSpanId, flags: knownFlags(flags) };
}

// Ids cut from a 4 KiB random buffer, not two getrandom calls a request (docs/benchmarks.md, "trace ids from…").
const randomPool = Buffer.alloc(4096);
let randomOffset = randomPool.length;

function randomHex(bytes: number): string {
  if (randomOffset + bytes > randomPool.length) {
    randomFillSync(randomPool);
    randomOffset = 0;
  }
  const hex = randomPool.toString('hex', randomOffset, randomOffset + bytes);
  randomOffset += bytes;
  return hex;
}

/** Never all zeros, which the spec forbids. */
function newSpanId(): string {
  const id = randomHex(8);
  return id === ZERO_SPAN_ID ? newSpanId() : id;
}

function newTraceId(): string {
  const id = randomHex(16);
  return id === ZERO_TRACE_ID ? newTraceId() : id;
}

export function traceContextFor(traceparentHeader: string | string[] | undefined): TraceContext {
  const caller = parseTraceparent(traceparentHeader);
  if (caller) return { traceId: caller.traceId, spanId: newSpanId(), parentSpanId: caller.parentSpanId, flags: caller.flags };
  return { traceId: newTraceId(), spanId: newSpanId(), parentSpanId: undefined, flags: '00' };
}

/** The `traceparent` naming this service's span. */
export function formatTraceparent(trace: TraceContext): string {
  return `00-${trace.traceId}-${trace.spanId}-${trace.flags}`;
}

/**
 * Adds the trace's log fields to a logger's bindings, with OpenTelemetry's names so log tools join them to
 * traces unconfigured. No flags: each field costs on every request's logger.
 */
export function addTraceLogFields<T extends Record<string, unknown>>(fields: T, trace: TraceContext): T {
  const bindings: Record<string, unknown> = fields;
  bindings.trace_id = trace.traceId;
  bindings.span_id = trace.spanId;
  if (trace.parentSpanId) bindings.parent_span_id = trace.parentSpanId;
  return fields;
}

// Who a request comes from: `request.ip` counts only when it is an IP address (else the peer's), and
// "one client" for the wrong-key limit is an IPv4 address or an IPv6 /64. @see docs/security.md "Limits"
/** Node's own IPv4 text, kept without parsing (hot path). */
const IPV4 = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const IPV4_WITH_PORT = /^(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}):\d{1,5}$/;
const BRACKETED = /^\[([^\]]+)\](?::\d{1,5})?$/;

/** The canonical IP address (IPv4-mapped → IPv4; `127.1`, `0x7f.0.0.1` refused), or null. */
export function canonicalAddress(text: string): string | null {
  let candidate = text.trim();
  if (IPV4.test(candidate)) return ipaddr.IPv4.isValidFourPartDecimal(candidate) ? candidate : null;
  candidate = IPV4_WITH_PORT.exec(candidate)?.[1] ?? BRACKETED.exec(candidate)?.[1] ?? candidate;
  if (ipaddr.IPv4.isValidFourPartDecimal(candidate)) return ipaddr.IPv4.parse(candidate).toString();
  if (!ipaddr.IPv6.isValid(candidate)) return null;
  const v6 = ipaddr.IPv6.parse(candidate);
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address().toString() : v6.toString();
}

export interface AddressedRequest {
  ip: string;
  socket: { remoteAddress?: string | undefined };
}

export function clientAddress(request: AddressedRequest): string {
  const { ip } = request;
  const peer = request.socket.remoteAddress ?? '';
  if (ip === peer && IPV4.test(ip)) return ip; // Node's own text: already canonical
  return canonicalAddress(ip) ?? canonicalAddress(peer) ?? peer;
}

/** The wrong-key limit's key: the IPv4 address, or the IPv6 /64. */
export function clientLimitKey(address: string): string {
  if (IPV4.test(address)) return address;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return address; // not an IP address (a Unix socket): counted as it is
  }
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  const prefix = v6.parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(':');
  return `${prefix}::/64`;
}
