// The service's pino logger, and what Fastify logs of each request through it.
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { pino, type Logger } from 'pino';
import type { Config } from './config.js';

export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({
    level: config.logLevel,
    // Belt and braces: request logs do not include headers, but a credential must never reach a log.
    redact: { paths: ['req.headers.authorization', 'headers.authorization', '*.apiKey'], censor: '[redacted]' },
  });
}

/**
 * One line per request, when it is answered: method, URL, status and time (plus the request id
 * from the request's child logger). Fastify's default is two lines, one on arrival with the
 * client's address and port and one on completion; a third of a small request's logging cost
 * went on the first. Errors keep Fastify's own error-level line.
 */
class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    if (error) return super.requestCompleted(error, request, reply, {});
    request.log.info(
      { method: request.method, url: request.url, statusCode: reply.statusCode, responseTime: reply.elapsedTime },
      'request completed',
    );
  }
}

export function requestLogController(): LogController {
  return new OneLinePerRequest();
}
