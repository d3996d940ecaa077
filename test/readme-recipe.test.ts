// README's "Use it from your app", run as written: its shell blocks in order (from a folder beside
// the service's checkout, `animal-store/`), its files written where they say, against a live
// server. Offline: the client package is the tarball `npm run client:pack` writes, and everything
// else comes from npm's cache through a loopback registry that knows this repository's lock file
// (test/support/lockfile-registry.ts). If the README drifts from what works, this fails.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLockfileRegistry, type LockfileRegistry } from './support/lockfile-registry.js';
import { RecipeRunner, recipeBlocks } from './support/markdown-recipe.js';
import { startTestServer, type TestServer } from './support/test-server.js';

const ROOT = resolve('.');
const run = promisify(execFile);

let server: TestServer;
let registry: LockfileRegistry;
let dir: string;
beforeAll(async () => {
  [server, registry] = await Promise.all([startTestServer({ provider: 'sqlite' }), startLockfileRegistry(join(ROOT, 'package-lock.json'))]);
  dir = await mkdtemp(join(tmpdir(), 'animal-store-readme-'));
  await symlink(ROOT, join(dir, 'animal-store'));
});
afterAll(async () => {
  await Promise.all([server?.close(), registry?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('README, "Use it from your app"', () => {
  it('takes an empty folder to a running typed app, with the commands as written', { timeout: 300_000 }, async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      // Where the commands find the service, its database (for `npm run keys`) and the packages.
      ANIMAL_STORE_URL: server.baseUrl,
      DATABASE_URL: server.databaseUrl,
      npm_config_registry: registry.url,
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    };
    delete env.ANIMAL_STORE_KEY;
    const blocks = await recipeBlocks(join(ROOT, 'README.md'), 'Use it from your app');
    expect(blocks.map((block) => block.info)).toEqual(['sh', 'json tsconfig.json', 'ts app.ts', 'sh']);
    const recipe = new RecipeRunner(dir, env);
    let lastOutput = '';
    for (const block of blocks) lastOutput = (await recipe.block(block)) || lastOutput;
    const cwd = recipe.cwd;
    expect(lastOutput).toMatch(/name: 'Rex'/);
    expect(lastOutput).toMatch(/\d+ available/);
    const manifest = JSON.parse(await readFile(join(cwd, 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({ type: 'module', dependencies: { '@animal-store/client': expect.stringContaining('.pack/') } });

    // Without a key, createClient says so before any call.
    const failed = await run('npx', ['tsx', 'app.ts'], { cwd, env: { ...env, ANIMAL_STORE_KEY: '' } }).then(
      () => null,
      (error: { stderr: string }) => error.stderr,
    );
    expect(failed).toMatch(/createClient: apiKey is empty \(got ""\)/);
  });
});
