// The service's pino logger: one JSON object per line, on stdout unless told otherwise (tests
// capture it). Fastify logs through it; src/http/request-logging.ts writes one line per request.
// Human-readable output is for `npm run dev`, which pipes this through pino-pretty.
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  const options = {
    level: config.logLevel,
    // Belt and braces: request logs do not include headers, but a credential must never reach a log.
    redact: { paths: ['req.headers.authorization', 'headers.authorization', '*.apiKey'], censor: '[redacted]' },
  };
  return destination ? pino(options, destination) : pino(options);
}
