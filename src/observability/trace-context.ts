// W3C Trace Context (https://www.w3.org/TR/trace-context/) for each request: the caller's
// `traceparent` is continued (same trace id, a new span id for this service's part, the caller's
// span as the parent), a new trace is started when it is absent or invalid. The result goes into
// every log line of the request and back to the caller in the response's `traceparent` header, so
// logs can be joined with the caller's traces. Nothing is recorded or exported here: this service
// does not sample, so a trace it starts has the sampled flag off, and a caller's sampled flag passes through.
import { randomFillSync } from 'node:crypto';

export interface TraceContext {
  /** 32 lower-case hex digits, shared by every span of the trace. */
  traceId: string;
  /** 16 hex digits: this service's span for the request. */
  spanId: string;
  /** The caller's span (the parent-id of its `traceparent`), or undefined when this request started the trace. */
  parentSpanId: string | undefined;
  /** Two hex digits (bit 0: sampled). */
  flags: string;
}

/**
 * version-traceid-parentid-flags. Version 00 has exactly these four fields; a later version may
 * append more after a dash, which a version-00 reader ignores (spec section 3.2.4).
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);

/** The flags this service passes on: sampled (0x01) and Level 2's random trace id (0x02); others are cleared. */
function knownFlags(flags: string): string {
  return (Number.parseInt(flags, 16) & 0x03).toString(16).padStart(2, '0');
}

/** The caller's context from a `traceparent` header, or null when it is absent or not valid. */
function parseTraceparent(header: string | string[] | undefined): { traceId: string; parentSpanId: string; flags: string } | null {
  if (typeof header !== 'string' || header.length > 512) return null;
  const match = TRACEPARENT.exec(header);
  if (!match) return null;
  const [, version, traceId, parentSpanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE_ID || parentSpanId === ZERO_SPAN_ID) return null;
  return { traceId, parentSpanId, flags: knownFlags(flags) };
}

// Random ids are cut from a buffer filled 4 KiB at a time: one getrandom call per ~170 requests
// instead of two per request.
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

/** A new span id (never all zeros, which the spec forbids). */
function newSpanId(): string {
  const id = randomHex(8);
  return id === ZERO_SPAN_ID ? newSpanId() : id;
}

function newTraceId(): string {
  const id = randomHex(16);
  return id === ZERO_TRACE_ID ? newTraceId() : id;
}

/** This request's trace context: the caller's trace continued with a new span, or a new trace. */
export function traceContextFor(traceparentHeader: string | string[] | undefined): TraceContext {
  const caller = parseTraceparent(traceparentHeader);
  if (caller) return { traceId: caller.traceId, spanId: newSpanId(), parentSpanId: caller.parentSpanId, flags: caller.flags };
  return { traceId: newTraceId(), spanId: newSpanId(), parentSpanId: undefined, flags: '00' };
}

/** The `traceparent` header naming this service's span, for the response (and any call it makes). */
export function formatTraceparent(trace: TraceContext): string {
  return `00-${trace.traceId}-${trace.spanId}-${trace.flags}`;
}

/**
 * Adds the fields a log line carries to `fields` (a logger's bindings), named as OpenTelemetry's
 * log data model and its pino instrumentation name them (`trace_id`, `span_id`), so log tools that
 * join logs to traces find them without configuration; `parent_span_id` is the caller's span. The
 * flags are left to the response header: each field is a cost on every request's logger.
 */
export function addTraceLogFields<T extends Record<string, unknown>>(fields: T, trace: TraceContext): T {
  const bindings: Record<string, unknown> = fields;
  bindings.trace_id = trace.traceId;
  bindings.span_id = trace.spanId;
  if (trace.parentSpanId) bindings.parent_span_id = trace.parentSpanId;
  return fields;
}
