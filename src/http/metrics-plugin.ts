// GET /metrics for Prometheus (prom-client). Public like /healthz: counts by route pattern and status,
// timings, process figures; never a pet, a key or a caller's URL. With METRICS_PORT, served instead
// by a server of its own on that port.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import Fastify, { LogController, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { sendUnknownRoute } from './call-pipeline.js';
import { servedMethods } from './served-methods.js';

type ServiceServer = FastifyInstance<Server, IncomingMessage, ServerResponse, Logger>;

declare module 'fastify' {
  interface FastifyInstance {
    /** The server of its own that serves /metrics when METRICS_PORT is set; null otherwise. */
    metricsServer: ServiceServer | null;
  }
}

const METRICS_PATH = '/metrics';

export interface MetricsPluginOptions {
  registry: Registry;
}

/** How long one rendering of the metrics is served: scrapes in between cost nothing to speak of. */
const RENDERED_FOR_MS = 1_000;

/** The /metrics route; rendered at most once per RENDERED_FOR_MS, so scraping in a loop cannot take the CPU. */
export const metricsRoute: FastifyPluginAsync<MetricsPluginOptions> = async (app, { registry }) => {
  let rendered: { at: number; text: Promise<string> } | null = null;
  app.get(METRICS_PATH, async (_request, reply) => {
    const now = Date.now();
    if (rendered === null || now - rendered.at >= RENDERED_FOR_MS) {
      const text = registry.metrics();
      rendered = { at: now, text };
      text.catch(() => (rendered = null));
    }
    const text = await rendered.text;
    return reply.type(registry.contentType).header('cache-control', 'no-store').send(text);
  });
};

/** A server of only /metrics, listening at the app's `onReady` and closed with it; scrapes would drown the log, so none is logged. */
export async function attachMetricsServer(
  app: ServiceServer,
  options: MetricsPluginOptions & { host: string; port: number; logger: Logger },
): Promise<ServiceServer> {
  const server = Fastify({ loggerInstance: options.logger, logController: new LogController({ disableRequestLogging: true }) });
  server.setNotFoundHandler((request, reply) => sendUnknownRoute(request, reply, servedMethods(server, request.url.split('?')[0]!)));
  await server.register(metricsRoute, { registry: options.registry });
  app.addHook('onReady', async () => {
    await server.listen({
      host: options.host,
      port: options.port,
      listenTextResolver: (address) => `Metrics listening at ${address} (GET /metrics only; the API has a port of its own)`,
    });
  });
  app.addHook('onClose', async () => {
    await server.close();
  });
  return server;
}
