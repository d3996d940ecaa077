// THE NESTJS PEER, NOT THE SERVICE. What a team would write with NestJS instead of this service:
// NestJS on Fastify serving the REST list, create and get of the same contract on SQLite, written
// the way NestJS's documentation teaches it: zod validation through Nest's own
// StandardSchemaValidationPipe (`@Body({ schema })`), the bearer API-key check as a global guard,
// the error envelope `{ code, message, status }` from a global exception filter, one pino line per
// request (Fastify's own logger). No output validation, metrics, rate limits or trace context:
// the service does more per request. Started by bench/run.ts (compiled with this folder's
// tsconfig) with PEER_PORT, PEER_DB (a SQLite file), PEER_MIGRATIONS (the service's SQLite
// migrations folder) and API_KEYS.
import 'reflect-metadata';
import { BadRequestException, StandardSchemaValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { LogController } from 'fastify';
import { AppModule } from './app.module.js';
import { issuesSentence } from '../peer-inputs.js';
import { EnvelopeFilter } from './envelope.filter.js';

/** Fastify's request log without its "incoming request" line: "request completed" is the one line. */
class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}
}

const port = Number(process.env.PEER_PORT);
if (!Number.isInteger(port)) throw new Error('PEER_PORT is required');

const app = await NestFactory.create<NestFastifyApplication>(
  AppModule,
  // Fastify's pino logger to stdout: one line per request, when it is answered.
  new FastifyAdapter({ logger: { level: 'info' }, logController: new OneLinePerRequest() }),
  { logger: ['error', 'warn'] },
);
app.useGlobalPipes(
  new StandardSchemaValidationPipe({
    exceptionFactory: (issues) => new BadRequestException(issuesSentence(issues)),
  }),
);
app.useGlobalFilters(new EnvelopeFilter());
app.enableShutdownHooks();
await app.listen(port, '127.0.0.1');
