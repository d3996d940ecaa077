// W3C Trace Context for each request: the caller's `traceparent` continued with a new span, or a new
// unsampled trace; into every log line and the response. @see docs/observability.md "Trace context"
import { randomFillSync } from 'node:crypto';

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
