// What the bench's servers are loaded with and how the service is configured for it: the API key
// every system is given, the scenarios' requests (bench/run.ts loads them all; bench/ab-shipped.ts
// and bench/profile.ts the REST list, create and get), and the service's production settings.
import type { Request } from './load.js';

export const API_KEY = 'bench-key-0123456789abcdefghij';
export const AUTH = { authorization: `Bearer ${API_KEY}` };
const JSON_BODY = { ...AUTH, 'content-type': 'application/json' };
const NEW_PET = JSON.stringify({ name: 'bench-pet', categoryId: 7, status: 'available' });

export interface Scenario {
  label: string;
  request: Request;
  /** Creates: the answers differ in `id` only. */
  creates?: boolean;
}

export const SCENARIOS: Scenario[] = [
  { label: 'REST list limit=20', request: { method: 'GET', path: '/v1/pets?limit=20', headers: AUTH } },
  { label: 'REST list status=pending', request: { method: 'GET', path: '/v1/pets?status=pending', headers: AUTH } },
  { label: 'REST create', request: { method: 'POST', path: '/v1/pets', headers: JSON_BODY, body: NEW_PET }, creates: true },
  { label: 'REST get (deprecated)', request: { method: 'GET', path: '/v1/pets/500', headers: AUTH } },
  {
    label: 'tRPC list limit=20',
    request: { method: 'GET', path: `/trpc/pets.list?input=${encodeURIComponent('{"limit":20}')}`, headers: AUTH },
  },
  { label: 'tRPC create', request: { method: 'POST', path: '/trpc/pets.create', headers: JSON_BODY, body: NEW_PET }, creates: true },
];

/** The REST list, create and get, those whose label contains `only` when it is set. */
export function restScenarios(only: string | undefined): Scenario[] {
  const rest = SCENARIOS.filter(({ label }) => ['REST list limit=20', 'REST create', 'REST get (deprecated)'].includes(label));
  return rest.filter(({ label }) => !only || label.includes(only));
}

/** The service's environment in the bench. */
export interface ServiceSettings {
  port: number;
  databaseUrl: string;
  directUrl?: string | undefined;
  /** The operator's NODE_OPTIONS (docs/operations.md); none: the service as shipped. */
  nodeOptions?: string | undefined;
  redisUrl?: string | undefined;
  poolSize?: number | undefined;
}

export function serviceEnv(settings: ServiceSettings): NodeJS.ProcessEnv {
  const { port, databaseUrl, directUrl, nodeOptions, redisUrl, poolSize } = settings;
  // Only what the service's settings need, as production would set them; nothing inherited
  // from this shell can change what is measured (except PATH and HOME, which npm needs).
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    // The memory bounds an operator sets (docs/operations.md), which the RSS target is measured with.
    ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
    API_KEYS: API_KEY,
    // What production runs with (README: the default), so the request log's cost is measured.
    LOG_LEVEL: 'info',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    ...(directUrl ? { DATABASE_DIRECT_URL: directUrl } : {}),
    ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
    ...(poolSize ? { DATABASE_POOL_SIZE: String(poolSize) } : {}),
    // One key sends every request. A limit far above what the load reaches keeps the per-key
    // counter on the measured path (its cost is part of the service) without refusing anything.
    RATE_LIMIT_PER_MINUTE: '1000000000',
    // The Prometheus metrics are counted on every request, as in production (their default; said
    // here so that the measured path does not depend on a default).
    METRICS_ENABLED: 'true',
    // Nothing balances over it: stopped between scenarios without the drain a balancer needs.
    SHUTDOWN_DRAIN_MS: '0',
  };
}
