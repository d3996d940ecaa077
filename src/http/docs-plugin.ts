// The interactive API reference at /v1/docs: Swagger UI (npm `swagger-ui-dist`, served from
// node_modules, no CDN) rendering the document served at /v1/openapi.json. "Authorize" takes an
// API key; "Try it out" then calls the API from the page. Public like the document: the page holds
// no data, and every call made from it needs a key.
//
// Swagger UI's deep links are `#/<tag>/<operationId>`, e.g. /v1/docs#/Pets/listPets.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';

export interface DocsPluginOptions {
  /** The absolute path of the OpenAPI document the page renders. */
  documentUrl: string;
  /** The page's title. */
  title: string;
}

const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/**
 * The files of swagger-ui-dist the page uses. The package also ships an index.html and an
 * initializer that load the public Petstore demo from the internet: those are never served.
 */
const ASSETS = new Set(['/swagger-ui.css', '/index.css', '/swagger-ui-bundle.js', '/favicon-32x32.png', '/favicon-16x16.png']);

/** Swagger UI's settings; they are the page's script, so they go out as JSON, never as markup. */
function swaggerUiConfig(documentUrl: string) {
  return {
    url: documentUrl,
    dom_id: '#swagger-ui',
    // Without the standalone preset: no top bar that offers to load some other document.
    layout: 'BaseLayout',
    deepLinking: true,
    // "Try it out" open on every operation: the page is there to call the API.
    tryItOutEnabled: true,
    displayRequestDuration: true,
    // Swagger UI would otherwise show a badge fetched from validator.swagger.io.
    validatorUrl: null,
  };
}

export const docsPlugin: FastifyPluginAsync<DocsPluginOptions> = async (docs, { documentUrl, title }) => {
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
  await docs.register(fastifyStatic, {
    root: SWAGGER_UI_DIR,
    prefix: '/assets/',
    decorateReply: false,
    allowedPath: (pathName) => ASSETS.has(pathName),
  });
};
