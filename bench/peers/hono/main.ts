// THE HONO PEER, NOT THE SERVICE. What a team would write with Hono instead of this service: the
// REST list, create and get of the same contract with @hono/zod-openapi's OpenAPIHono on
// @hono/node-server, on SQLite (bench/peers/sqlite-pets.ts), the way their documentation teaches:
// routes from `createRoute` with zod request schemas (validation messages from one `defaultHook`),
// the bearer API-key check as middleware with the service's own verifier, the error envelope
// `{ code, message, status }` from `app.onError` and `app.notFound`, one pino line per request.
// Responses are typed by their schemas but not validated at run time (the library does not), and
// no metrics, rate limits or trace context: the service does more per request. Started by
// bench/peers.ts with PEER_PORT, PEER_DB (a SQLite file), PEER_MIGRATIONS (the service's SQLite
// migrations folder) and API_KEYS.
import { serve } from '@hono/node-server';
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { createMiddleware } from 'hono/factory';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import pino from 'pino';
import { z } from 'zod';
import { createApiKeyVerifier } from '../../../src/auth/api-keys.js';
import { NewPet, Pet, Pets } from '../../../src/domain/pet-schemas.js';
import { issuesSentence, ListQuery, PetId } from '../peer-inputs.js';
import { openDatabase, petsStore } from '../sqlite-pets.js';

const { PEER_PORT, PEER_DB, PEER_MIGRATIONS } = process.env;
const port = Number(PEER_PORT);
if (!Number.isInteger(port) || !PEER_DB || !PEER_MIGRATIONS) throw new Error('PEER_PORT, PEER_DB and PEER_MIGRATIONS are required');

const pets = petsStore(openDatabase(PEER_DB, PEER_MIGRATIONS));
const verifier = createApiKeyVerifier({ envKeys: (process.env.API_KEYS ?? '').split(','), store: pets });

const DEPRECATION = {
  deprecation: '@1795219200',
  sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
  link: '</v1/docs#/Pets/listPets>; rel="deprecation"',
};

/** The envelope every error answers with. */
const envelope = (code: string, message: string, status: ContentfulStatusCode) => ({ code, message, status });
const CODES: Partial<Record<number, string>> = { 400: 'BAD_REQUEST', 401: 'UNAUTHORIZED', 404: 'NOT_FOUND' };

const app = new OpenAPIHono({
  // Input validation failures as a 400 whose message names each issue, as the service words them.
  defaultHook: (result, c) => {
    if (!result.success) return c.json(envelope('BAD_REQUEST', issuesSentence(result.error.issues), 400), 400);
  },
});

// pino to stdout, one line per request once it is answered (what Fastify's logger writes for NestJS).
const logger = pino({ level: 'info' });
let requestCount = 0;
app.use(async (c, next) => {
  const started = performance.now();
  await next();
  logger.info(
    {
      reqId: `req-${++requestCount}`,
      req: { method: c.req.method, url: c.req.path },
      res: { statusCode: c.res.status },
      responseTime: performance.now() - started,
    },
    'request completed',
  );
});

/** Every route needs a valid key: refused before its input is read. */
const apiKey = createMiddleware(async (c, next) => {
  if (!(await verifier.authenticate(c.req.header('authorization')))) {
    throw new HTTPException(401, { message: 'A valid API key is required: send "Authorization: Bearer <key>".' });
  }
  await next();
});
app.use('/v1/*', apiKey);

const json = <T extends z.ZodType>(schema: T, description: string) => ({ content: { 'application/json': { schema } }, description });

app.openapi(
  createRoute({ method: 'get', path: '/v1/pets', request: { query: ListQuery }, responses: { 200: json(Pets, 'A page of pets') } }),
  (c) => {
    const { limit, status } = c.req.valid('query');
    return c.json(pets.list(limit, status), 200);
  },
);

app.openapi(
  createRoute({
    method: 'post',
    path: '/v1/pets',
    request: { body: { content: { 'application/json': { schema: NewPet } }, required: true } },
    responses: { 201: json(Pet, 'The new pet') },
  }),
  (c) => c.json(pets.create(c.req.valid('json')), 201),
);

app.openapi(
  createRoute({
    method: 'get',
    path: '/v1/pets/{petId}',
    deprecated: true,
    request: { params: z.object({ petId: PetId }) },
    responses: { 200: json(Pet, 'The pet') },
  }),
  (c) => {
    for (const [name, value] of Object.entries(DEPRECATION)) c.header(name, value);
    const { petId } = c.req.valid('param');
    const pet = pets.find(petId);
    if (!pet) throw new HTTPException(404, { message: `No pet has id ${petId}.` });
    return c.json(pet, 200);
  },
);

app.notFound((c) => c.json(envelope('NOT_FOUND', `No such resource: ${c.req.method} ${c.req.path}`, 404), 404));
app.onError((error, c) => {
  // An unexpected error never shows its message.
  if (!(error instanceof HTTPException)) return c.json(envelope('INTERNAL_SERVER_ERROR', 'Internal server error', 500), 500);
  const status = error.status;
  return c.json(envelope(CODES[status] ?? 'ERROR', error.message, status), status);
});

const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' });
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
