// CORS for both surfaces: a preflight from an origin in CORS_ORIGINS (empty: off) is answered by
// @fastify/cors; any other gets 400 in the surface's error shape naming CORS_ORIGINS, so the developer
// reading the browser's network tab sees what to set (not tRPC's 415 or REST's 405).
import cors from '@fastify/cors';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { ErrorAnswer } from '../api/errors.js';
import { sendEnvelope } from './call-pipeline.js';

/** How long a browser may keep a preflight's answer, in seconds (Chromium's cap). */
export const PREFLIGHT_MAX_AGE_SECONDS = 7200;

const ALLOWED_HEADERS = ['authorization', 'content-type', 'idempotency-key', 'x-request-id', 'traceparent'];
const EXPOSED_HEADERS = [
  'x-request-id',
  'traceparent',
  'ratelimit',
  'ratelimit-policy',
  'retry-after',
  'deprecation',
  'sunset',
  'link',
  'idempotent-replayed',
];

/** Why a preflight from `origin` is refused, for the developer who reads it. */
function preflightRefusal(origin: string, allowed: readonly string[]): ErrorAnswer {
  const why =
    allowed.length === 0
      ? 'CORS is off on this service (CORS_ORIGINS is empty)'
      : `${origin} is not in this service's CORS_ORIGINS (${allowed.join(', ')})`;
  return {
    status: 400,
    message: `Cross-origin call refused: ${why}. Add ${origin} to CORS_ORIGINS, or call the service from the page's own origin through a proxy.`,
  };
}

const isPreflight = (request: FastifyRequest) =>
  request.method === 'OPTIONS' &&
  typeof request.headers.origin === 'string' &&
  request.headers['access-control-request-method'] !== undefined;

interface CorsOptions {
  origins: readonly string[];
  /** The methods allowed: those the service answers anywhere (served-methods.ts, methodsServedAnywhere). */
  methods: readonly string[];
  sendTrpcError: (reply: FastifyReply, answer: ErrorAnswer) => FastifyReply;
}

const plugin: FastifyPluginAsync<CorsOptions> = async (app, { origins, methods, sendTrpcError }) => {
  const listed = new Set(origins);
  app.addHook('onRequest', (request, reply, done) => {
    if (!isPreflight(request) || listed.has(request.headers.origin!)) return done();
    const answer = preflightRefusal(request.headers.origin!, origins);
    if (request.call.surface === 'trpc') sendTrpcError(reply, answer);
    else sendEnvelope(reply, answer);
  });
  if (origins.length === 0) return;
  await app.register(cors, {
    origin: [...origins],
    methods: [...methods],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
  });
};

/** CORS for the whole server (not encapsulated: its hooks run before any surface's). */
export const corsPlugin = fp(plugin, { name: 'cors' });
