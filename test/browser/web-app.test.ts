// client/README.md's "In a web app (React + TanStack Query)", run as written, then used in a real
// browser: its commands in order from a folder beside the service's checkout (offline: the packages
// come from npm's cache through test/support/lockfile-registry.ts, which knows what the root lock
// file pins in test/browser/packages/), its files written where they say, against a live service on
// a port of its own (the recipe's http://127.0.0.1:3000 is replaced by it). The app is built once
// for the page's own origin and once for the service's (`VITE_ANIMAL_STORE_URL`), each served by the
// recipe's server.js, and loaded in the headless Chromium of @sparticuz/chromium
// (test/support/headless-chromium.ts): list, filter, add, a field's error from zodError; Vite's dev
// server through its proxy; from another origin with CORS off, the package's message. Last, what
// the package adds to a bundle over tRPC's bare httpBatchLink client (esbuild, minified, gzip).
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchHeadlessChromium, type HeadlessChromium } from '../support/headless-chromium.js';
import { startLockfileRegistry, type LockfileRegistry } from '../support/lockfile-registry.js';
import { RecipeRunner, recipeBlocks, type RunningServer } from '../support/markdown-recipe.js';
import { API_KEY, startTestServer, type TestServer } from '../support/test-server.js';

const ROOT = resolve('.');
const run = promisify(execFile);
const SECTION = 'In a web app (React + TanStack Query)';
/** The service's address as the recipe writes it. */
const RECIPE_SERVICE_URL = 'http://127.0.0.1:3000';
/** The most the package may add to an app's bundle over tRPC's bare client, gzipped. */
const MAX_ADDED_GZIP_BYTES = 5 * 1024;

let service: TestServer;
let registry: LockfileRegistry;
let chromium: HeadlessChromium;
let dir: string;
let recipe: RecipeRunner;
let app: string;
/** Vite's dev server, the built app behind server.js, and the build for the service's origin. */
let dev: RunningServer;
let production: RunningServer;
let direct: RunningServer;

beforeAll(async () => {
  [service, registry] = await Promise.all([
    startTestServer({ provider: 'sqlite' }),
    startLockfileRegistry(join(ROOT, 'package-lock.json')),
  ]);
  dir = await mkdtemp(join(tmpdir(), 'animal-store-web-app-'));
  await symlink(ROOT, join(dir, 'animal-store'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ANIMAL_STORE_URL: service.baseUrl,
    DATABASE_URL: service.databaseUrl,
    PORT: '0',
    npm_config_registry: registry.url,
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
  delete env.ANIMAL_STORE_KEY;
  recipe = new RecipeRunner(dir, env);
  const blocks = await recipeBlocks(join(ROOT, 'client', 'README.md'), SECTION);
  expect(blocks.map((block) => block.info)).toEqual([
    'sh',
    'json tsconfig.json',
    'ts vite.config.ts',
    'html index.html',
    'ts src/trpc.ts',
    'tsx src/main.tsx',
    'tsx src/App.tsx',
    'sh',
    'sh server',
    'js server.js',
    'sh',
    'sh server',
    'sh',
  ]);
  for (const block of blocks) await recipe.block({ ...block, text: block.text.replaceAll(RECIPE_SERVICE_URL, service.baseUrl) });
  app = recipe.cwd;
  [dev, production] = recipe.servers as [RunningServer, RunningServer];
  // The build for the service's own origin, served as the recipe serves a build.
  direct = await recipe.block({ info: 'sh server', text: 'node server.js dist-direct' }).then(() => recipe.servers.at(-1)!);
  await Promise.all([
    service.post('/v1/pets', { name: 'Alma', categoryId: 1 }),
    service.post('/v1/pets', { name: 'Bruno', categoryId: 2, status: 'pending' }),
  ]);
  chromium = await launchHeadlessChromium();
}, 600_000);

afterAll(async () => {
  await chromium?.close();
  await recipe?.stopServers();
  service?.app.server.closeAllConnections(); // the browser's preconnections
  await Promise.all([service?.close(), registry?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Seen {
  /** Every request the page made, `METHOD url`. */
  requests: string[];
  failed: string[];
  errors: string[];
}

async function openPage(url: string): Promise<{ page: Page; seen: Seen }> {
  const page = await chromium.browser.newPage();
  const seen: Seen = { requests: [], failed: [], errors: [] };
  page.on('request', (request) => seen.requests.push(`${request.method()} ${request.url()}`));
  page.on('requestfailed', (request) => seen.failed.push(`${request.method()} ${request.url()}`));
  page.on('pageerror', (error) => seen.errors.push(error.message));
  page.on('console', (message) => {
    // Chromium logs every answer of 400 and over, and every refused cross-origin call, as an error.
    if (message.type() === 'error' && !/^Failed to load resource|blocked by CORS policy/.test(message.text()))
      seen.errors.push(message.text());
  });
  await page.goto(url);
  return { page, seen };
}

const listed = (page: Page) => page.getByRole('list', { name: 'Pets' }).getByRole('listitem');

describe('the recipe', () => {
  it('installs as a valid tree (npm ls), with the tRPC that @trpc/tanstack-react-query pins, and type-checks', async () => {
    const { stdout } = await run('npm', ['ls', '--all', '--json'], {
      cwd: app,
      env: { ...process.env, npm_config_registry: registry.url },
    });
    const tree = JSON.parse(stdout) as { dependencies: Record<string, { version: string }>; problems?: string[] };
    expect(tree.problems).toBeUndefined();
    const pinned = JSON.parse(await readFile(join(app, 'node_modules', '@trpc', 'tanstack-react-query', 'package.json'), 'utf8'));
    const installed = async (name: string) => JSON.parse(await readFile(join(app, 'node_modules', name, 'package.json'), 'utf8')).version;
    expect(await installed('@trpc/client')).toBe(pinned.peerDependencies['@trpc/client']);
    expect(await installed('@trpc/server')).toBe(pinned.peerDependencies['@trpc/server']);
    const services = JSON.parse(await readFile(join(ROOT, 'node_modules', '@trpc', 'client', 'package.json'), 'utf8')).version;
    expect(await installed('@trpc/client')).not.toBe(services); // an older tRPC than the service's
  });

  it('holds no API key in the built page', async () => {
    for (const folder of ['dist', 'dist-direct']) {
      const files = await readdir(join(app, folder), { recursive: true });
      for (const file of files.filter((name) => /\.(js|html)$/.test(name))) {
        expect(await readFile(join(app, folder, file), 'utf8')).not.toContain(API_KEY.slice(0, 12));
      }
    }
  });
});

describe('the built app, same origin behind server.js', { timeout: 120_000 }, () => {
  it('lists, filters, adds, and shows a field error from zodError; every call to its own origin', async () => {
    const { page, seen } = await openPage(production.url);
    await expect
      .poll(() => listed(page).allTextContents(), { timeout: 30_000 })
      .toEqual(expect.arrayContaining(['Alma (available)', 'Bruno (pending)']));

    await page.getByRole('combobox', { name: 'Status', exact: true }).selectOption('pending');
    await expect.poll(() => listed(page).allTextContents(), { timeout: 30_000 }).toEqual(['Bruno (pending)']);

    await page.getByRole('textbox', { name: 'Name' }).fill('Cleo');
    await page.getByRole('spinbutton', { name: 'Category' }).fill('4');
    await page.getByRole('combobox', { name: "New pet's status" }).selectOption('pending');
    await page.getByRole('button', { name: 'Add' }).click();
    await expect.poll(() => listed(page).allTextContents(), { timeout: 30_000 }).toEqual(['Bruno (pending)', 'Cleo (pending)']);
    expect(await (await service.request('/v1/pets?status=pending')).json()).toMatchObject([
      { name: 'Bruno' },
      { name: 'Cleo', categoryId: 4 },
    ]);

    await page.getByRole('textbox', { name: 'Name' }).fill('   ');
    await page.getByRole('button', { name: 'Add' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.allTextContents()).toEqual([expect.stringMatching(/^Name: .*blank/)]);

    const origin = new URL(production.url).origin;
    expect(seen.requests.filter((request) => !request.split(' ')[1]!.startsWith(`${origin}/`))).toEqual([]);
    expect(seen.requests.filter((request) => request.startsWith('OPTIONS'))).toEqual([]);
    expect(seen.errors).toEqual([]);
    await page.close();
  });
});

describe("Vite's dev server, through its proxy", { timeout: 120_000 }, () => {
  it('lists the pets: the proxy adds the key', async () => {
    const { page, seen } = await openPage(dev.url);
    await expect.poll(() => listed(page).allTextContents(), { timeout: 60_000 }).toEqual(expect.arrayContaining(['Alma (available)']));
    expect(seen.errors).toEqual([]);
    await page.close();
  });
});

describe('built for the service on another origin, CORS off', { timeout: 120_000 }, () => {
  it('shows the empty-key error, then the no-answer message naming CORS_ORIGINS, after one retry', async () => {
    const { page, seen } = await openPage(direct.url);
    await page.getByRole('button', { name: 'Use key' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/^createClient: apiKey is empty \(got ""\): give the service's API key/);

    await page.getByLabel('Your API key').fill(API_KEY);
    await page.getByRole('button', { name: 'Use key' }).click();
    const alert = page.getByRole('alert');
    await expect
      .poll(() => alert.allTextContents(), { timeout: 30_000 })
      .toEqual([
        `No answer from ${service.baseUrl}/trpc (Failed to fetch): the service is down or unreachable, or it does not allow this page's origin ${new URL(direct.url).origin}: the service's CORS_ORIGINS must list it`,
      ]);
    // The first attempt and one retry; TanStack Query's retries are off.
    const refused = seen.failed.filter((request) => request.startsWith(`GET ${service.baseUrl}/trpc/pets.list`));
    expect(refused).toHaveLength(2);
    expect(seen.errors).toEqual([]);
    await page.close();
  });
});

describe('bundle cost', () => {
  it('the package adds at most 5 kB gzip over tRPC’s bare httpBatchLink client', async () => {
    const gzipped = async (code: string) => {
      const result = await build({
        stdin: { contents: code, resolveDir: app, loader: 'ts' },
        bundle: true,
        minify: true,
        format: 'esm',
        platform: 'browser',
        write: false,
        logLevel: 'silent',
      });
      return gzipSync(result.outputFiles[0]!.contents).length;
    };
    const bare = await gzipped(
      "import { createTRPCClient, httpBatchLink } from '@trpc/client';\nexport const client = createTRPCClient({ links: [httpBatchLink({ url: '/trpc' })] });",
    );
    const withPackage = await gzipped(
      "import { createClient } from '@animal-store/client';\nexport const client = createClient(location.origin, null);",
    );
    console.log(
      `bundle (esbuild, minified, gzip): tRPC's bare client ${bare} B, with @animal-store/client ${withPackage} B: +${withPackage - bare} B`,
    );
    expect(withPackage - bare).toBeLessThanOrEqual(MAX_ADDED_GZIP_BYTES);
    expect(withPackage).toBeGreaterThan(bare); // it did take the package in
  });
});
