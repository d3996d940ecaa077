// `npx tsx bench/observability-cost.ts`: what the metrics and the trace context add to each
// request, measured in isolation (one process, no I/O but the log line to /dev/null), so that the
// figure survives a shared, loaded machine better than a req/s comparison does. Each step is timed
// in interleaved rounds; medians of the rounds are printed in µs per request.
import { pino } from 'pino';
import type { IncomingMessage } from 'node:http';
import { requestChildLogger } from '../src/http/request-record.js';
import { createServiceMetrics } from '../src/observability/metrics.js';
import { addTraceLogFields, formatTraceparent, traceContextFor } from '../src/http/request-record.js';

const CALLS = Number(process.env.CALLS ?? 200_000);
const ROUNDS = Number(process.env.ROUNDS ?? 9);

const logger = pino({ level: 'info' }, pino.destination('/dev/null'));
const metrics = createServiceMetrics();
const untraced = { headers: {} } as unknown as IncomingMessage;
const traced = { headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } } as unknown as IncomingMessage;
const line = { method: 'GET', route: '/v1/pets', url: '/v1/pets?limit=20', statusCode: 200, responseTimeMs: 1.2 };

/** What src/http/request-record.ts's request logger adds: the completion line. */
interface LazyRequestLogger {
  completed(fields: object, message: string): void;
}

const steps: Record<string, () => void> = {
  // Without trace context: the request's logger with its id, and its one line.
  'logger {reqId} + request line (before)': () => logger.child({ reqId: 'f3a1c2d4' }, {}).info(line, 'request completed'),
  // After: the same with a new trace (no traceparent sent), and the response header's value.
  'logger with a new trace + line + header': () => {
    formatTraceparent(traceContextFor(undefined));
    requestChildLogger(logger, { reqId: 'f3a1c2d4' }, {}, untraced).info(line, 'request completed');
  },
  // After: continuing a caller's trace.
  'logger continuing a trace + line + header': () => {
    formatTraceparent(traceContextFor(traced.headers.traceparent));
    requestChildLogger(logger, { reqId: 'f3a1c2d4' }, {}, traced).info(line, 'request completed');
  },
  // The request's logger and its one line: a pino child per request (Fastify's own way), against
  // ours, which makes the child only when something else logs (src/http/request-record.ts).
  'pino child per request + line': () => {
    const bindings = { reqId: 'f3a1c2d4' };
    addTraceLogFields(bindings, traceContextFor(undefined));
    logger.child(bindings).info(line, 'request completed');
  },
  'lazy child (ours) + line': () =>
    (requestChildLogger(logger, { reqId: 'f3a1c2d4' }, {}, untraced) as unknown as LazyRequestLogger).completed(line, 'request completed'),
  'metrics: one request observed': () =>
    metrics.duration.observe({ surface: 'rest', route: '/v1/pets', method: 'GET', status_code: 200 }, 0.0012),
};

const times: Record<string, number[]> = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, step] of Object.entries(steps)) {
    const started = performance.now();
    for (let i = 0; i < CALLS; i++) step();
    (times[name] ??= []).push(((performance.now() - started) * 1000) / CALLS);
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
for (const [name, values] of Object.entries(times)) console.log(`${name.padEnd(45)} ${median(values).toFixed(2)} µs`);
const { readFileSync } = await import('node:fs');
console.log(`load average: ${readFileSync('/proc/loadavg', 'utf8').trim().split(' ').slice(0, 3).join(' ')}`);
