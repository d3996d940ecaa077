// The service's pino logger. Fastify logs every request through it.
import { pino, type Logger } from 'pino';
import type { Config } from './config.js';

export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({
    level: config.logLevel,
    // Belt and braces: request logs do not include headers, but a credential must never reach a log.
    redact: { paths: ['req.headers.authorization', 'headers.authorization', '*.apiKey'], censor: '[redacted]' },
  });
}
