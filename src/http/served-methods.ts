// The methods a server has a route for at a path, for a 405's `Allow`: the public, static routes
// outside /v1 and /trpc (`/`, /healthz, /readyz, /metrics), whose patterns are their paths.
import type { FastifyInstance } from 'fastify';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
/** `hasRoute` reads its url as a route pattern (`:name`, `*`, regexes): only plain paths are asked. */
const PLAIN_PATH = /^\/[A-Za-z0-9/_.-]*$/;

export function servedMethods(server: Pick<FastifyInstance, 'hasRoute'>, path: string): string[] {
  if (!PLAIN_PATH.test(path)) return [];
  return METHODS.filter((method) => server.hasRoute({ method, url: path }));
}
