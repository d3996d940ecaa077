// The service's pino logger: one JSON object per line, on stdout unless told otherwise (tests
// capture it). Fastify logs through it; src/http/request-logging.ts writes one line per request.
// Human-readable output is for `npm run dev`, which pipes this through pino-pretty.
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';
import { redactApiKeys } from './domain/api-key-shape.js';

/** Fields that would hold an API key or the Authorization header, at the places they can be logged. */
const REDACTED_PATHS = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'request.headers.authorization',
  'apiKey',
  'apiKeys',
  'key',
  'config.apiKeys',
  'err.config.headers.authorization',
];

/**
 * stdout through pino's own destination (sonic-boom), synchronous, holding lines until
 * LOG_BUFFER_BYTES of them are pending: one write system call for many request lines rather than
 * one per line (the figures: docs/benchmarks.md). What is pending goes out
 * at least every LOG_FLUSH_INTERVAL_MS (an idle service's lines are not held back longer), and at
 * process exit (process.exit, SIGTERM/SIGINT through main.ts's shutdown, a fatal error).
 *
 * What it costs: a process killed outright (SIGKILL, the OOM killer) loses the lines still pending:
 * at most LOG_BUFFER_BYTES, logged within the last LOG_FLUSH_INTERVAL_MS. A stdout that stops
 * draining blocks the process, as any synchronous write does.
 */
export const LOG_BUFFER_BYTES = 4096;
export const LOG_FLUSH_INTERVAL_MS = 100;

function stdoutDestination(): DestinationStream {
  const destination = pino.destination({ dest: 1, sync: true, minLength: LOG_BUFFER_BYTES, periodicFlush: LOG_FLUSH_INTERVAL_MS });
  // pino flushes a destination at exit only in its asynchronous mode; this one's pending lines too.
  process.on('exit', () => destination.flushSync());
  return destination;
}

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  const options = {
    level: config.logLevel,
    // Belt and braces: request logs do not include headers, but a credential must never reach a log.
    // Exact paths, where a key could be (a request's headers, the settings, a key object): a wildcard
    // makes pino walk every field of every line, a third of a request line's cost (docs/benchmarks.md).
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    // And whatever is shaped like an API key, in any field (a URL's query string, a header, an
    // error's message): each finished line is looked at once (src/domain/api-key-shape.ts). (A
    // request line's `url` loses its credential query parameters where it is made: request-logging.ts.)
    hooks: { streamWrite: redactApiKeys },
  };
  return pino(options, destination ?? stdoutDestination());
}
