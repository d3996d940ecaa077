// The OpenAPI document at /v1/openapi.json (openapi-document.ts, built at the first request for it) and
// the API reference at /v1/docs: Swagger UI (swagger-ui-dist, from node_modules, no CDN) rendering it.
// Both are public: they hold no data, and are needed before a key. Its assets are served by our own routes from shared
// Buffers: docs/architecture.md ("departures").
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AnyTRPCRouter } from '@trpc/server';
import { API_TITLE, buildOpenApiDocument } from './openapi-document.js';
import type { RestRoute } from './rest-plugin.js';

interface ReferencePageOptions {
  /** The absolute path of the OpenAPI document the page renders. */
  documentUrl: string;
  title: string;
}

const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The files of swagger-ui-dist the page uses; never its index.html and initializer (they load the Petstore demo). */
const ASSET_TYPES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'index.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

/** A browser reuses an asset this long without asking; after that, asking costs a 304. */
const CACHE_CONTROL = 'public, max-age=3600';

/** A larger body goes out in slices, so a slow reader holds one slice and the send timeout sees it move. */
const SLICE_BYTES = 64 * 1024;

interface Representation {
  body: Buffer;
  etag: string;
}

interface Asset extends Representation {
  name: string;
  type: string;
  lastModified: string;
  /** Last-Modified as a time, to the second (HTTP dates have no finer precision). */
  modifiedMs: number;
  compressible: boolean;
  /** The gzip representation: undefined until first asked for, null while made (or if it saves nothing). */
  gzip: Representation | null | undefined;
}

const gzipAsync = promisify(gzip);

/** Read once per process; every answer shares the Buffer. */
let assets: Promise<Asset[]> | undefined;
function loadAssets(): Promise<Asset[]> {
  return (assets ??= Promise.all(
    Object.entries(ASSET_TYPES).map(async ([name, type]): Promise<Asset> => {
      const path = join(SWAGGER_UI_DIR, name);
      const [body, { mtimeMs }] = await Promise.all([readFile(path), stat(path)]);
      const modifiedMs = Math.floor(mtimeMs / 1000) * 1000;
      return {
        name,
        type,
        body,
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
        lastModified: new Date(modifiedMs).toUTCString(),
        modifiedMs,
        compressible: extname(name) !== '.png',
        gzip: undefined,
      };
    }),
  ));
}

/** The gzip representation if it is ready; the first call starts making it (off the event loop). */
function gzipOf(asset: Asset): Representation | null {
  if (asset.gzip === undefined) {
    asset.gzip = null;
    gzipAsync(asset.body, { level: 9 }).then(
      (body) => {
        if (body.length < asset.body.length) asset.gzip = { body, etag: `${asset.etag.slice(0, -1)}-gzip"` };
      },
      () => {}, // served uncompressed
    );
  }
  return asset.gzip;
}

/** Whether Accept-Encoding takes gzip (by name or `*`, with a weight above 0). */
function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  let gzipWeight: number | undefined;
  let anyWeight: number | undefined;
  for (const part of header.split(',')) {
    const [coding = '', ...parameters] = part.split(';');
    const name = coding.trim().toLowerCase();
    const q = parameters.map((parameter) => parameter.trim().toLowerCase()).find((parameter) => parameter.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (name === 'gzip' || name === 'x-gzip') gzipWeight = weight;
    else if (name === '*') anyWeight = weight;
  }
  return (gzipWeight ?? anyWeight ?? 0) > 0;
}

/** A conditional GET the client's copy satisfies (RFC 9110 13.1: If-None-Match first, else If-Modified-Since). */
function notModified(request: FastifyRequest, asset: Asset, etag: string): boolean {
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    return ifNoneMatch.split(',').some((tag) => {
      const opaque = tag.trim().replace(/^W\//, '');
      return opaque === '*' || opaque === etag;
    });
  }
  const since = Date.parse(request.headers['if-modified-since'] ?? '');
  return !Number.isNaN(since) && asset.modifiedMs <= since;
}

/** The body in slices (no copy); a queued (pipelined) answer takes none until Node hands it the socket. */
function slices(body: Buffer, response: ServerResponse): Readable {
  let offset = 0;
  const stream = new Readable({
    highWaterMark: SLICE_BYTES,
    read() {
      if (response.socket === null) response.once('socket', pushSlice);
      else pushSlice();
    },
  });
  function pushSlice(): void {
    const end = Math.min(offset + SLICE_BYTES, body.length);
    stream.push(body.subarray(offset, end));
    offset = end;
    if (offset === body.length) stream.push(null);
  }
  return stream;
}

function serveAsset(asset: Asset, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const compressed = asset.compressible && acceptsGzip(request.headers['accept-encoding']) ? gzipOf(asset) : null;
  const { body, etag } = compressed ?? asset;
  reply.header('content-type', asset.type).header('cache-control', CACHE_CONTROL).header('etag', etag);
  reply.header('last-modified', asset.lastModified);
  if (compressed) reply.header('content-encoding', 'gzip');
  if (asset.compressible) reply.header('vary', 'accept-encoding');
  if (notModified(request, asset, etag)) return reply.code(304).send();
  // HEAD: Fastify's HEAD route takes the length from a Buffer and sends no body.
  if (request.method === 'HEAD' || body.length <= SLICE_BYTES) return reply.send(body);
  return reply.header('content-length', String(body.length)).send(slices(body, reply.raw));
}

/** Swagger UI's settings; they are the page's script, so they go out as JSON, never as markup. */
function swaggerUiConfig(documentUrl: string) {
  return {
    url: documentUrl,
    dom_id: '#swagger-ui',
    // Without the standalone preset: no top bar that offers to load some other document.
    layout: 'BaseLayout',
    deepLinking: true,
    // Switched on, the button reads "Cancel" and pressing "Try it out" turns it off.
    tryItOutEnabled: false,
    displayRequestDuration: true,
    // Swagger UI would otherwise show a badge fetched from validator.swagger.io.
    validatorUrl: null,
  };
}

const referencePage: FastifyPluginAsync<ReferencePageOptions> = async (docs, { documentUrl, title }) => {
  const assets = `${docs.prefix}/assets`;
  const page = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${title}</title>
    <link rel="stylesheet" href="${assets}/swagger-ui.css">
    <link rel="stylesheet" href="${assets}/index.css">
    <link rel="icon" type="image/png" href="${assets}/favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="${assets}/favicon-16x16.png" sizes="16x16">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="${assets}/swagger-ui-bundle.js"></script>
    <script src="${docs.prefix}/init.js"></script>
  </body>
</html>
`;
  // A script file rather than an inline one, so that a Content-Security-Policy can stay strict.
  const init = `window.ui = SwaggerUIBundle(Object.assign(${JSON.stringify(swaggerUiConfig(documentUrl))}, {
  presets: [SwaggerUIBundle.presets.apis],
}));
`;

  docs.get('/', (_request, reply) => reply.type('text/html; charset=utf-8').send(page));
  docs.get('/init.js', (_request, reply) => reply.type('text/javascript; charset=utf-8').send(init));
  for (const asset of await loadAssets()) {
    docs.get(`/assets/${asset.name}`, (request, reply) => serveAsset(asset, request, reply));
  }
};

/** Registered under the REST base path: the document of `routes` and its reference page. */
export const docsPlugin: FastifyPluginAsync<{ router: AnyTRPCRouter; routes: readonly RestRoute[] }> = async (api, { router, routes }) => {
  // Built at the first request for it, then kept; a failed build is not kept.
  let document: ReturnType<typeof buildOpenApiDocument> | undefined;
  const openApiDocument = () => {
    const building = (document ??= buildOpenApiDocument(router, routes));
    building.catch(() => {
      if (document === building) document = undefined;
    });
    return building;
  };
  api.get('/openapi.json', async (_request, reply) => reply.send(await openApiDocument()));
  await api.register(referencePage, { prefix: '/docs', documentUrl: `${api.prefix}/openapi.json`, title: `${API_TITLE} API reference` });
};
