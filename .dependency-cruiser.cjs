// The shape of src/ (docs/architecture.md, "Layers"), checked by `npm run lint` (dependency-cruiser).
// Folders are layers and imports only go down:
//
//   cli/                          command-line entries (npm run keys, db:*, studio, openapi:types)
//   app.ts main.ts start.ts       the service: builds the Fastify app, listens, starts
//   http/                         the surfaces (/trpc, /v1, health, metrics, docs)
//   api/                          the procedures: tRPC init, context, routers
//   auth/ idempotency/            data access and the services a request uses; none imports another
//   limits/ observability/
//   config.ts logger.ts           the settings (config.ts knows which DATABASE_URL is which: db/providers.ts)
//   db/                           the database: connections, SQL (the pets table's too), migrations, errors
//   domain/ runtime/              pure rules: the pet schemas and int64, messages, deprecation; Node lines
//
// client/ is the client package (npm run client:pack): its source may use the router's type and the
// request limits of src/, nothing else of it, and no package but its peers and its dependency.
// Type-only imports count too (tsPreCompilationDeps): a cycle through types is still a cycle.

/** Everything above a layer, as a path pattern. */
const above = {
  domain: '^src/(?!domain/)',
  runtime: '^src/(?!runtime/)',
  db: '^src/(?!db/|domain/)',
  services: '^src/(api|http|cli)/|^src/(app|main|start)\\.ts$|^client/',
  api: '^src/(http|cli)/|^src/(app|main|start)\\.ts$|^client/',
  http: '^src/cli/|^src/(app|main|start)\\.ts$|^client/',
  service: '^src/cli/|^client/',
};

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import cycles, between files or (through them) between folders.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'domain-is-pure',
      severity: 'error',
      comment:
        "src/domain holds the contract's rules: zod schemas and plain TypeScript, no tRPC, Fastify or Prisma, nothing else of src/. Node's core modules are allowed (node:crypto: an API key's digest).",
      from: { path: '^src/domain/' },
      to: { pathNot: ['^src/domain/', '^node_modules/zod/', '^node_modules/@zod/'], dependencyTypesNot: ['core'] },
    },
    { name: 'runtime-is-alone', severity: 'error', from: { path: '^src/runtime/' }, to: { path: above.runtime } },
    {
      name: 'db-only-down',
      severity: 'error',
      comment: 'The database layer takes its settings as arguments; it imports only src/domain below it.',
      from: { path: '^src/db/' },
      to: { path: above.db },
    },
    {
      name: 'config-only-down',
      severity: 'error',
      comment:
        'The settings know which DATABASE_URL is which (db/providers.ts) and nothing else of src/; the logger reads them, and knows what an API key looks like (domain/api-key-shape.ts) to keep keys out of the log.',
      from: { path: '^src/(config|logger)\\.ts$' },
      to: { path: '^src/', pathNot: ['^src/db/providers\\.ts$', '^src/config\\.ts$', '^src/domain/api-key-shape\\.ts$'] },
    },
    {
      name: 'services-only-down',
      severity: 'error',
      from: { path: '^src/(auth|idempotency|limits|observability)/' },
      to: { path: above.services },
    },
    {
      name: 'services-apart',
      severity: 'error',
      comment: 'Each service folder stands alone; the procedures (api/) and src/app.ts put them together.',
      from: { path: '^src/(auth|idempotency|limits|observability)/' },
      to: { path: '^src/(auth|idempotency|limits|observability)/', pathNot: '^src/$1/' },
    },
    {
      name: 'services-below-config',
      severity: 'error',
      comment: 'Services may read settings types, but not the logger or the process entry.',
      from: { path: '^src/(auth|idempotency|limits|observability)/' },
      to: { path: '^src/logger\\.ts$' },
    },
    { name: 'api-only-down', severity: 'error', from: { path: '^src/api/' }, to: { path: above.api } },
    { name: 'http-only-down', severity: 'error', from: { path: '^src/http/' }, to: { path: above.http } },
    {
      name: 'service-entry-only-down',
      severity: 'error',
      from: { path: '^src/(app|main|start)\\.ts$' },
      to: { path: above.service },
    },
    {
      name: 'nothing-imports-cli',
      severity: 'error',
      comment: 'Command-line entries are the top: only tests may import them.',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'client-ships-alone',
      severity: 'error',
      comment:
        "client/ is the client package: of src/ only the router's type (replaced by its declaration in the package) and the request limits (bundled), nothing that opens a database or runs a server.",
      from: { path: '^client/' },
      to: { path: '^src/', pathNot: ['^src/api/root-router\\.ts$', '^src/http/request-head-limits\\.ts$'] },
    },
    {
      name: 'client-router-type-only',
      severity: 'error',
      comment: 'The package has no server code at run time: the router is imported for its type only.',
      from: { path: '^client/' },
      to: { path: '^src/api/root-router\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'client-packages',
      severity: 'error',
      comment: 'The package depends on @trpc/client and @trpc/server (peers) and openapi-fetch, nothing else (client/package.json).',
      from: { path: '^client/' },
      to: {
        dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'],
        pathNot: '^node_modules/(@trpc/(client|server)|openapi-fetch)/',
      },
    },
    {
      name: 'no-dev-dependencies-in-src',
      severity: 'error',
      comment: 'npm ci --omit=dev must run the service: only src/cli (openapi:types) may use a devDependency.',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { dependencyTypes: ['npm-dev'] },
    },
    // Library internals and unstable paths, each confined to the one module that owns the
    // departure (docs/architecture.md, "Where we depart from a library"), so that an upgrade breaks
    // one file and the test that guards it.
    {
      name: 'trpc-unstable-core-in-one-module',
      severity: 'error',
      comment: "tRPC's unstable core (no semver promise) is used only by src/api/trpc-internals.ts, which checks its shape at start-up.",
      from: { pathNot: '^src/api/trpc-internals\\.ts$' },
      to: { path: '^node_modules/@trpc/server/dist/unstable-core-do-not-import' },
    },
    {
      name: 'schema-engine-in-one-module',
      severity: 'error',
      comment: "Prisma's WebAssembly schema engine (its bindings loaded by hand) is used only by src/db/schema-engine.ts.",
      from: { pathNot: '^src/db/schema-engine\\.ts$' },
      to: { path: '^node_modules/@prisma/schema-engine-wasm/' },
    },
    // Each peer framework of the benchmark (bench/peers/<peer>) is used by its peer alone.
    ...[
      ['nestjs', '(@nestjs/|reflect-metadata/|rxjs/)'],
      ['orpc', '@orpc/'],
      ['hono', '(hono|@hono/)'],
    ].map(([peer, modules]) => ({
      name: `${peer}-only-in-its-peer`,
      severity: 'error',
      comment: `${peer} is the benchmark's peer (bench/peers/${peer}), nothing else of the project.`,
      from: { pathNot: `^bench/peers/${peer}/` },
      to: { path: `^node_modules/${modules}` },
    })),
    {
      name: 'no-unresolvable',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    // Prisma's generated clients are not ours to shape.
    exclude: { path: '^src/db/generated/' },
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
  },
};
