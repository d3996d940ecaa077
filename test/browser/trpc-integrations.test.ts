// The client package beside tRPC's React integrations as the registry serves them: the newest
// @trpc/tanstack-react-query (11.22.1) and @trpc/react-query (11.19.0) each pin @trpc/client and
// @trpc/server to their own version, which the package's peer range must accept. For each, a new
// project installs the packed package with the integration as a plain `npm install` would, then
// again from its lock file with a plain `npm ci` (no overrides, no legacy flags), finds a valid tree
// (`npm ls`), type-checks an app that hands createClient() to the integration, and runs it against
// the live service with that older tRPC: a batched query, a create, and a validation error with
// its zodError, as the service's own 11.25.2 would. Offline: the registry is
// test/support/lockfile-registry.ts, which knows what the root lock file pins in test/browser/packages/.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLockfileRegistry, type LockfileRegistry } from '../support/lockfile-registry.js';
import { API_KEY, startTestServer, type TestServer } from '../support/test-server.js';

const ROOT = resolve('.');
const run = promisify(execFile);

/** Each integration, and how an app hands it the client (type-checked only: React does not run here). */
const INTEGRATIONS = {
  '@trpc/tanstack-react-query': `
import { createTRPCContext } from '@trpc/tanstack-react-query';
export const { TRPCProvider } = createTRPCContext<AppRouter>();
type ProviderClient = Parameters<typeof TRPCProvider>[0]['trpcClient'];`,
  '@trpc/react-query': `
import { createTRPCReact } from '@trpc/react-query';
export const trpc = createTRPCReact<AppRouter>();
type ProviderClient = Parameters<typeof trpc.Provider>[0]['client'];`,
} as const;

const APP = (integration: string, url: string) => `
import { createClient, type AppRouter, type AnimalStoreErrorData, type ListPetsInput, type NewPet, type Pet, type PetStatus } from '@animal-store/client';
${integration}
const api = createClient('${url}', '${API_KEY}');
export const handed: ProviderClient = api;

const status: PetStatus = 'pending';
const input: ListPetsInput = { status, limit: 5 };
const pet: NewPet = { name: 'Wire', categoryId: 6, status };
const created: Pet = await api.pets.create.mutate(pet);
const [listed, all] = await Promise.all([api.pets.list.query(input), api.pets.list.query()]);
let invalid: { message: string; data: AnimalStoreErrorData | undefined } | undefined;
try {
  await api.pets.list.query({ limit: 500 });
} catch (error) {
  invalid = { message: (error as Error).message, data: (error as { data?: AnimalStoreErrorData }).data };
}
console.log(JSON.stringify({ created, listed, all: all.length, invalid }));
`;

let server: TestServer;
let registry: LockfileRegistry;
let dir: string;
let tarball: string;

beforeAll(async () => {
  [server, registry] = await Promise.all([startTestServer({ provider: 'sqlite' }), startLockfileRegistry(join(ROOT, 'package-lock.json'))]);
  dir = await mkdtemp(join(tmpdir(), 'animal-store-trpc-integrations-'));
  const { stdout } = await run('npm', ['run', '--silent', 'client:pack', '--', '--out-dir', dir], { cwd: ROOT });
  tarball = stdout.trimEnd().split('\n').at(-1)!;
}, 120_000);
afterAll(async () => {
  await Promise.all([server?.close(), registry?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.each(Object.entries(INTEGRATIONS))('beside %s, the newest the registry serves', (integration, code) => {
  it('npm install, then npm ci: a valid tree; the app type-checks and calls the service with that tRPC', { timeout: 300_000 }, async () => {
    const project = join(dir, integration.replace('/', '-'));
    await mkdir(project);
    const npm = (...args: string[]) =>
      run('npm', [...args, '--no-audit', '--no-fund'], {
        cwd: project,
        env: { ...process.env, npm_config_registry: registry.url, npm_config_update_notifier: 'false' },
        maxBuffer: 16 * 1024 * 1024,
      }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(`npm ${args.join(' ')} failed:\n${error.stdout ?? ''}${error.stderr ?? error.message}`);
      });
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'a-web-app', private: true, type: 'module' }));
    await npm('install', tarball, integration, '@tanstack/react-query', 'react');
    await npm('install', '--save-dev', 'typescript@5', '@types/react');
    await rm(join(project, 'node_modules'), { recursive: true });
    await npm('ci');
    const tree = JSON.parse((await npm('ls', '--all', '--json')).stdout) as { problems?: string[] };
    expect(tree.problems).toBeUndefined();

    const pinned = JSON.parse(await readFile(join(project, 'node_modules', integration, 'package.json'), 'utf8')).peerDependencies;
    const version = async (name: string) => JSON.parse(await readFile(join(project, 'node_modules', name, 'package.json'), 'utf8')).version;
    expect(await version('@trpc/client')).toBe(pinned['@trpc/client']);
    expect(await version('@trpc/server')).toBe(pinned['@trpc/server']);

    const source = APP(code, server.baseUrl);
    await writeFile(join(project, 'app.ts'), source);
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        // A web app's settings (create-vite's): a browser's lib, resolved as a bundler does.
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022', 'DOM'],
          module: 'ESNext',
          moduleResolution: 'Bundler',
          types: [],
          strict: true,
          skipLibCheck: true,
          noEmit: true,
        },
        files: ['app.ts'],
      }),
    );
    await run(process.execPath, [join(project, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], { cwd: project }).catch(
      (error: { stdout?: string }) => {
        throw new Error(`tsc failed:\n${error.stdout}`);
      },
    );

    await writeFile(
      join(project, 'app.js'),
      ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText,
    );
    const { stdout } = await run(process.execPath, ['app.js'], { cwd: project });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(result.created).toEqual({ id: expect.any(Number), name: 'Wire', categoryId: 6, status: 'pending' });
    expect(result.listed).toContainEqual(result.created);
    expect(result.all).toBeGreaterThanOrEqual(1);
    expect(result.invalid).toEqual({
      message: 'limit: must be at most 100',
      data: expect.objectContaining({
        code: 'BAD_REQUEST',
        httpStatus: 400,
        zodError: { formErrors: [], fieldErrors: { limit: [expect.any(String)] } },
      }),
    });
  });
});
