// The methods a server has a route for at a path, for a 405's `Allow` outside /v1 and /trpc (static
// routes, whose patterns are their paths); and the methods the service answers anywhere.
import type { FastifyInstance } from 'fastify';
import type { RestRoute } from './rest-plugin.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
/** `hasRoute` reads its url as a route pattern (`:name`, `*`, regexes): only plain paths are asked. */
const PLAIN_PATH = /^\/[A-Za-z0-9/_.-]*$/;

export function servedMethods(server: Pick<FastifyInstance, 'hasRoute'>, path: string): string[] {
  if (!PLAIN_PATH.test(path)) return [];
  return METHODS.filter((method) => server.hasRoute({ method, url: path }));
}

/** Every method the service answers somewhere (a CONNECT's 405 `Allow`, CORS's allowed methods). */
export function methodsServedAnywhere(routes: readonly RestRoute[]): string[] {
  const served = new Set(['GET', 'HEAD', 'POST', ...routes.flatMap((route) => route.allow)]);
  return METHODS.filter((method) => served.has(method));
}
