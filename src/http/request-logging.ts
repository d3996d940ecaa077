// One log line per request, written when it has been answered: request id (from the request's
// child logger), method, route pattern, URL, status and duration. Fastify's default is two lines,
// one on arrival and one on completion, naming only the raw URL; a third of a small request's
// logging cost went on the first. Done as Fastify's LogController rather than hooks, so it costs
// no extra promise per request. Headers are never logged, so neither is a key.
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * What the request was for, as a pattern: `/v1/pets/{petId}`, `/trpc/pets.list`. Set by the
     * surface that understood it; otherwise the Fastify route (`/healthz`), or null when none matched.
     */
    routePattern?: string;
  }
}

function routeOf(request: FastifyRequest): string | null {
  return request.routePattern ?? request.routeOptions.url ?? null;
}

class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    if (error) return super.requestCompleted(error, request, reply, {});
    request.log.info(
      {
        method: request.method,
        route: routeOf(request),
        url: request.url,
        statusCode: reply.statusCode,
        responseTimeMs: Math.round(reply.elapsedTime * 100) / 100,
      },
      'request completed',
    );
  }
}

export function requestLogController(): LogController {
  return new OneLinePerRequest();
}
