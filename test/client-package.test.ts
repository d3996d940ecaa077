// The client package as an internal TypeScript app gets it: `npm run client:pack` writes the
// tarball, a new project in a temporary directory installs it by path with no network (its peers
// @trpc/client and @trpc/server copied from this repository's node_modules), type-checks an app
// script under the strictest settings with NodeNext and with Bundler resolution (wrong calls
// marked @ts-expect-error must not compile), sees `pets.get` flagged deprecated, and runs the
// script against a live server through a proxy that drops the answer to one create.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedOpenApiDocument } from '../src/cli/rest-api-types.js';
import { startFaultyProxy, type FaultyProxy } from './support/faulty-proxy.js';
import { API_KEY, startTestServer, type TestServer } from './support/test-server.js';

const run = promisify(execFile);
const ROOT = resolve('.');
const REPO_MODULES = join(ROOT, 'node_modules');

/** The settings of the strictest app that installs the package. */
const STRICT = {
  strict: true,
  skipLibCheck: false,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  noImplicitOverride: true,
  noImplicitReturns: true,
  noPropertyAccessFromIndexSignature: true,
  verbatimModuleSyntax: true,
  isolatedModules: true,
  target: 'ES2022',
  // tRPC 11's own declarations use Disposable and AsyncDisposable (lib esnext.disposable, or @types/node).
  lib: ['ES2022', 'DOM', 'ESNext.Disposable'],
  types: [],
};
const RESOLUTIONS = {
  nodenext: { module: 'NodeNext', moduleResolution: 'NodeNext' },
  bundler: { module: 'ESNext', moduleResolution: 'Bundler' },
};
/** Packages whose types must never reach the app: the server's dependencies. */
const SERVER_PACKAGES = /node_modules\/(fastify|@fastify|@prisma|prisma|pino|express|h3|trpc-to-openapi|zod|pg|better-sqlite3|ioredis)\//;

/** The app: every line is what a team would write from the package's README. */
const APP = (urls: { api: string; limited: string }, key: string) => `
import { TRPCClientError } from '@trpc/client';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server';
import { createClient, createRestClient, type AnimalStoreClientError, type RestComponents, type RouterOutputs } from '@animal-store/client';

type Pet = RouterOutputs['pets']['create'];
// Exact types, not \`any\`: each line is a type error unless both sides are the same type.
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
export const petIsExact: Equal<Pet, { status: 'available' | 'pending' | 'sold'; name: string; categoryId: number; id: number }> = true;
export const codeIsExact: Equal<NonNullable<AnimalStoreClientError['data']>['code'], TRPC_ERROR_CODE_KEY> = true;
export const statusIsExact: Equal<NonNullable<AnimalStoreClientError['data']>['httpStatus'], number> = true;
export const zodErrorIsExact: Equal<
  NonNullable<AnimalStoreClientError['data']>['zodError'],
  { formErrors: string[]; fieldErrors: { [field: string]: string[] | undefined } } | null
> = true;
export const envelopeIsExact: Equal<keyof RestComponents['schemas']['Error'], 'code' | 'message' | 'status'> = true;
const api = createClient('${urls.api}', '${key}');
const rest = createRestClient('${urls.api}', '${key}');

/** A failed call's tRPC error code and status, caught with this app's own TRPCClientError. */
async function failure(call: Promise<unknown>): Promise<{ code: TRPC_ERROR_CODE_KEY | undefined; httpStatus: number | undefined; isOwnClass: boolean; message?: string; fields?: string[] } | 'succeeded'> {
  try {
    await call;
    return 'succeeded';
  } catch (error) {
    if (!(error instanceof TRPCClientError)) return { code: undefined, httpStatus: undefined, isOwnClass: false };
    const typed: AnimalStoreClientError = error;
    const fields = typed.data?.zodError?.fieldErrors;
    return { code: typed.data?.code, httpStatus: typed.data?.httpStatus, isOwnClass: true, ...(fields ? { message: typed.message, fields: Object.keys(fields) } : {}) };
  }
}

/** Every pet, 100 a page, each page starting after the last id of the one before. */
async function allPets(): Promise<Pet[]> {
  const all: Pet[] = [];
  for (let after: number | undefined; ; ) {
    const page = await api.pets.list.query(after === undefined ? { limit: 100 } : { limit: 100, after });
    all.push(...page);
    const last = page[page.length - 1];
    if (page.length < 100 || last === undefined) return all;
    after = last.id;
  }
}

const rex: Pet = await api.pets.create.mutate({ name: 'Rex', categoryId: 3 });
const got = await api.pets.get.query({ petId: rex.id });

const many = await Promise.all(Array.from({ length: 120 }, (_, i) => api.pets.create.mutate({ name: 'Crowd ' + i, categoryId: 4 })));

const retried = await api.pets.create.mutate({ name: 'Lost answer, retried', categoryId: 5 }, { context: { idempotencyKey: 'lost-answer-retried' } });
const notRetried = await failure(
  createClient('${urls.api}', '${key}', { retries: 0 }).pets.create.mutate({ name: 'Lost answer, not retried', categoryId: 5 }, { context: { idempotencyKey: 'lost-answer-not-retried' } }),
);

const errors = {
  notFound: await failure(api.pets.get.query({ petId: 987654 })),
  badRequest: await failure(api.pets.list.query({ limit: 500 })),
  unauthorized: await failure(createClient('${urls.api}', 'not-a-key-0123456789').pets.list.query()),
  tooManyRequests: await (async () => {
    const limited = createClient('${urls.limited}', '${key}', { retries: 0 });
    await limited.pets.list.query();
    return failure(limited.pets.list.query());
  })(),
};

const restMissing = await rest.GET('/pets/{petId}', { params: { path: { petId: 987654 } } });
const envelope: RestComponents['schemas']['Error'] | undefined = restMissing.error;
const restCreated = await rest.POST('/pets', { body: { name: 'Bella', categoryId: 2 }, params: { header: { 'Idempotency-Key': 'bella-1' } } });

const everyPet = await allPets();
const named = (name: string) => everyPet.filter((pet) => pet.name === name).length;

console.log(JSON.stringify({
  rex, got, errors, envelope, restCreated: restCreated.data,
  many: { count: many.length, distinctIds: new Set(many.map((pet) => pet.id)).size, listed: everyPet.filter((pet) => pet.name.startsWith('Crowd ')).length },
  retried, storedRetried: named('Lost answer, retried'), notRetried, storedNotRetried: named('Lost answer, not retried'),
  pages: Math.ceil(everyPet.length / 100), total: everyPet.length,
}));

// Never called: each marked line must be a type error, or the type-check fails on the unused directive.
export function wrongCalls(): void {
  // @ts-expect-error categoryId is required
  void api.pets.create.mutate({ name: 'Rex' });
  // @ts-expect-error colour is not a field of a new pet
  void api.pets.create.mutate({ name: 'Rex', categoryId: 1, colour: 'brown' });
  // @ts-expect-error status is one of available, pending, sold
  void api.pets.list.query({ status: 'lost' });
  // @ts-expect-error petId is a number
  void api.pets.get.query({ petId: '1' });
  // @ts-expect-error there is no pets.delete
  void api.pets.delete.mutate({ petId: 1 });
  // @ts-expect-error a pet's name is a string
  const wrongName: number = rex.name;
  // @ts-expect-error an error's code is one of tRPC's words, not a number
  const wrongCode: number | undefined = (errors.notFound as Exclude<typeof errors.notFound, 'succeeded'>).code;
  // @ts-expect-error categoryId is required on REST too
  void rest.POST('/pets', { body: { name: 'Rex' } });
  // @ts-expect-error there is no DELETE
  void rest.DELETE('/pets/{petId}', { params: { path: { petId: 1 } } });
  void [wrongName, wrongCode];
}
`;

let server: TestServer;
let limited: TestServer;
let proxy: FaultyProxy;
let dir: string;
let project: string;
let packOutput: string;
let tarball: string;

/** Runs a file of the app's project with Node, in the project, failing with its output. */
async function inProject(file: string, args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [file, ...args], { cwd: project, maxBuffer: 64 * 1024 * 1024 }).catch(
    (error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`${file} ${args.join(' ')} failed:\n${error.stdout ?? ''}${error.stderr ?? error.message}`);
    },
  );
  return stdout;
}

beforeAll(async () => {
  [server, limited] = await Promise.all([startTestServer(), startTestServer({ config: { rateLimitPerMinute: 1 } })]);
  proxy = await startFaultyProxy(server.baseUrl);
  dir = await mkdtemp(join(tmpdir(), 'animal-store-client-package-'));
  project = join(dir, 'app');

  ({ stdout: packOutput } = await run('npm', ['run', '--silent', 'client:pack', '--', '--out-dir', dir], { cwd: ROOT }));
  tarball = packOutput.trimEnd().split('\n').at(-1)!;

  await mkdir(project);
  const fromRepository = (name: string) => `file:${join(REPO_MODULES, name)}`;
  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({
      name: 'an-internal-app',
      private: true,
      type: 'module',
      dependencies: {
        '@animal-store/client': `file:${tarball}`,
        // The app's own copies of the peers (and of the package's dependency, which npm would
        // otherwise look up in the registry), copied from this repository's node_modules.
        '@trpc/client': fromRepository('@trpc/client'),
        '@trpc/server': fromRepository('@trpc/server'),
        'openapi-fetch': fromRepository('openapi-fetch'),
        'openapi-typescript-helpers': fromRepository('openapi-typescript-helpers'),
      },
      devDependencies: { typescript: fromRepository('typescript') },
    }),
  );
  // --install-links: real copies in the app's node_modules, as from a registry, not links back here.
  await run('npm', ['install', '--offline', '--install-links', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: project });

  for (const [name, options] of Object.entries(RESOLUTIONS)) {
    await writeFile(
      join(project, `tsconfig.${name}.json`),
      JSON.stringify({ compilerOptions: { ...STRICT, ...options, noEmit: true }, files: ['app.ts'] }),
    );
  }
  await writeFile(join(project, 'app.ts'), APP({ api: proxy.baseUrl, limited: limited.baseUrl }, API_KEY));
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await Promise.all([server?.close(), limited?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('npm run client:pack', () => {
  it('prints the tarball last: the API version, peers @trpc/client and @trpc/server, and no server code', async () => {
    expect(tarball).toMatch(new RegExp(`^${dir}/animal-store-client-[\\d.]+\\.tgz$`));
    const installed = join(project, 'node_modules', '@animal-store', 'client');
    const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({
      name: '@animal-store/client',
      version: (await servedOpenApiDocument()).info.version,
      type: 'module',
      peerDependencies: { '@trpc/client': expect.any(String), '@trpc/server': expect.any(String) },
      dependencies: { 'openapi-fetch': expect.any(String) },
    });
    expect(Object.keys(manifest.dependencies)).toEqual(['openapi-fetch']);
    expect(manifest.devDependencies).toBeUndefined();

    const files = await readdir(join(installed, 'dist'));
    expect(files.filter((file) => file.endsWith('.js'))).toEqual(['index.js']);
    const code = await readFile(join(installed, 'dist', 'index.js'), 'utf8');
    expect([...code.matchAll(/^import .* from "([^"]+)";$/gm)].map((match) => match[1]).sort()).toEqual(['@trpc/client', 'openapi-fetch']);
    expect(code).not.toMatch(/fastify|prisma|pino|TRPCClientError = class/);
    // The app's @trpc/client is a copy of its own, not a link into this repository.
    expect((await run('realpath', [join(project, 'node_modules', '@trpc', 'client')])).stdout.trim()).toBe(
      join(project, 'node_modules', '@trpc', 'client'),
    );
  });
});

describe('the types, in an app with the strictest settings', () => {
  for (const resolution of Object.keys(RESOLUTIONS)) {
    it(
      `type-check with moduleResolution ${resolution}: no error, wrong calls refused, nothing of the server's dependencies`,
      { timeout: 60_000 },
      async () => {
        const listed = await inProject('node_modules/typescript/bin/tsc', ['-p', `tsconfig.${resolution}.json`, '--listFiles']);
        const files = listed.trim().split('\n');
        expect(files.filter((line) => !line.startsWith('/'))).toEqual([]); // an error would be a line of its own
        expect(files.filter((file) => SERVER_PACKAGES.test(file))).toEqual([]);
        expect(files).toContain(join(project, 'node_modules', '@animal-store', 'client', 'dist', 'app-router.d.ts'));
        expect(files.every((file) => file.startsWith(project))).toBe(true);
      },
    );
  }

  it('pets.get is deprecated where developers look: diagnostic 6385 on each use, with the sunset date and the replacement', async () => {
    const parsed = ts.getParsedCommandLineOfConfigFile(
      join(project, 'tsconfig.nodenext.json'),
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
    )!;
    const file = join(project, 'app.ts');
    const service = ts.createLanguageService({
      getScriptFileNames: () => parsed.fileNames,
      getScriptVersion: () => '1',
      getScriptSnapshot: (name) => (ts.sys.fileExists(name) ? ts.ScriptSnapshot.fromString(ts.sys.readFile(name)!) : undefined),
      getCurrentDirectory: () => project,
      getCompilationSettings: () => parsed.options,
      getDefaultLibFileName: (options) => ts.getDefaultLibFilePath(options),
      fileExists: ts.sys.fileExists,
      readFile: ts.sys.readFile,
      readDirectory: ts.sys.readDirectory,
      directoryExists: ts.sys.directoryExists,
      getDirectories: ts.sys.getDirectories,
    });
    const text = ts.sys.readFile(file)!;
    const uses = [...text.matchAll(/api\.pets\.(\w+)\./g)].map((match) => ({ name: match[1], at: match.index + 'api.pets.'.length }));
    const deprecated = service.getSuggestionDiagnostics(file).filter((diagnostic) => diagnostic.code === 6385);
    expect(deprecated.map((diagnostic) => text.slice(diagnostic.start, diagnostic.start + diagnostic.length))).toEqual(
      uses.filter((use) => use.name === 'get').map(() => 'get'),
    );
    expect(deprecated.map((diagnostic) => diagnostic.start)).toEqual(uses.filter((use) => use.name === 'get').map((use) => use.at));
    expect(deprecated.length).toBeGreaterThanOrEqual(2);

    const info = service.getQuickInfoAtPosition(file, uses.find((use) => use.name === 'get')!.at)!;
    const tag = info.tags?.find((candidate) => candidate.name === 'deprecated');
    expect(ts.displayPartsToString(tag?.text)).toMatch(/2030-12-05.*pets\.list.*status/);
    expect(
      service
        .getSuggestionDiagnostics(file)
        .filter((diagnostic) => diagnostic.code === 6385 && text.slice(diagnostic.start).startsWith('list')),
    ).toEqual([]);
  });
});

describe('the app, run against a live server', () => {
  it(
    'creates, pages, gets, catches errors with its own TRPCClientError, creates 120 at once, and a create whose answer was lost is retried to one pet',
    { timeout: 60_000 },
    async () => {
      proxy.dropAnswerOnce((request) => request.headers['idempotency-key'] === 'lost-answer-retried');
      proxy.dropAnswerOnce((request) => request.headers['idempotency-key'] === 'lost-answer-not-retried');
      // The type-checks above hold the types; here only the code is needed (as a bundler would strip the types).
      const source = await readFile(join(project, 'app.ts'), 'utf8');
      await writeFile(
        join(project, 'app.js'),
        ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText,
      );
      const result = JSON.parse((await inProject('app.js', [])).trim().split('\n').at(-1)!);

      const pet = { id: expect.any(Number), name: 'Rex', categoryId: 3, status: 'available' };
      expect(result.rex).toEqual(pet);
      expect(result.got).toEqual(result.rex);
      expect(result.errors).toEqual({
        notFound: { code: 'NOT_FOUND', httpStatus: 404, isOwnClass: true },
        badRequest: { code: 'BAD_REQUEST', httpStatus: 400, isOwnClass: true, message: 'limit: must be at most 100', fields: ['limit'] },
        unauthorized: { code: 'UNAUTHORIZED', httpStatus: 401, isOwnClass: true },
        tooManyRequests: { code: 'TOO_MANY_REQUESTS', httpStatus: 429, isOwnClass: true },
      });
      expect(result.envelope).toEqual({ code: 'NOT_FOUND', message: expect.any(String), status: 404 });
      expect(result.restCreated).toEqual({ id: expect.any(Number), name: 'Bella', categoryId: 2, status: 'available' });
      expect(result.many).toEqual({ count: 120, distinctIds: 120, listed: 120 });
      expect(result.pages).toBeGreaterThanOrEqual(2); // more than 100 pets: `after` was followed

      // Each create carried its own Idempotency-Key: 120 different keys for the 120.
      const creates = proxy.seen.filter((request) => request.method === 'POST' && request.path.startsWith('/trpc/pets.create'));
      expect(new Set(creates.map((request) => request.idempotencyKey)).size).toBe(creates.length - 1); // the retry repeats its key
      expect(creates.every((request) => request.idempotencyKey)).toBe(true);

      // The lost answer: forwarded, answered by the server, dropped; the retry sent the same key and got the replay.
      const lost = creates.filter((request) => request.idempotencyKey === 'lost-answer-retried');
      expect(lost.map((request) => request.fault)).toEqual(['answer dropped', undefined]);
      expect(result.retried).toEqual({ id: expect.any(Number), name: 'Lost answer, retried', categoryId: 5, status: 'available' });
      expect(result.storedRetried).toBe(1);
      // Without retries the same loss fails the call, though the pet was stored: the retry is what answers it.
      expect(result.notRetried).toEqual({ code: undefined, httpStatus: undefined, isOwnClass: true });
      expect(result.storedNotRetried).toBe(1);
      expect(creates.filter((request) => request.idempotencyKey === 'lost-answer-not-retried')).toHaveLength(1);
    },
  );
});
