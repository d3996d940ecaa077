// The service's pino logger: one JSON object per line, on stdout (written synchronously) unless
// told otherwise (tests capture it). Fastify logs through it; src/http/request-logging.ts writes one line per request.
// Human-readable output is for `npm run dev`, which pipes this through pino-pretty.
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

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

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  const options = {
    level: config.logLevel,
    // Belt and braces: request logs do not include headers, but a credential must never reach a log.
    // Exact paths, where a key could be (a request's headers, the settings, a key object): a wildcard
    // makes pino walk every field of every line, a third of a request line's cost (docs/benchmarks.md).
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  // stdout written synchronously, one write per line: a line logged is out of the process, even if
  // it is killed next, and it costs less than pino's default asynchronous destination, whose
  // buffering copies the pending lines at every line (docs/benchmarks.md, "Figures behind the
  // code's choices"). A stdout that stops draining (a stuck log collector) blocks the process then.
  return pino(options, destination ?? pino.destination({ dest: 1, sync: true }));
}
