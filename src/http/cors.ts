// Browsers on other origins (CORS), for both surfaces: the one rule of which origins may call, with
// which methods and headers, and what a preflight the service does not allow is told.
//
// CORS_ORIGINS lists the origins (src/config.ts); empty, CORS is off. A preflight (OPTIONS with
// Origin and Access-Control-Request-Method) from a listed origin is answered 204 by @fastify/cors,
// with the methods the service answers (read from the router) and a Max-Age of 7200 s (Chromium's cap;
// Firefox's is 86 400 s). Any other preflight (CORS off, or an origin not listed) gets 400 in the
// surface's error shape naming CORS_ORIGINS, so that the developer reading the browser's network
// tab sees what to set, instead of tRPC's 415 or REST's 405 for a method it does not route.
import cors from '@fastify/cors';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { ErrorAnswer } from '../api/errors.js';
import { sendEnvelope } from './error-senders.js';
import { isTrpcTarget } from './trpc-plugin.js';

/** How long a browser may keep a preflight's answer, in seconds: Chromium keeps at most 7200, Firefox 86 400. */
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
  /** Sends an error in tRPC's shape, for targets under /trpc. */
  sendTrpcError: (reply: FastifyReply, answer: ErrorAnswer) => FastifyReply;
}

const plugin: FastifyPluginAsync<CorsOptions> = async (app, { origins, methods, sendTrpcError }) => {
  const listed = new Set(origins);
  app.addHook('onRequest', (request, reply, done) => {
    if (!isPreflight(request) || listed.has(request.headers.origin!)) return done();
    const answer = preflightRefusal(request.headers.origin!, origins);
    if (isTrpcTarget(request.url)) sendTrpcError(reply, answer);
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
