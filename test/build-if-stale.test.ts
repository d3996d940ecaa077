// `npm start`'s prestart (scripts/build-if-stale.mjs) on a fresh checkout, under the memory bounds
// docs/operations.md gives the service: the TypeScript build must not inherit them (it needs more
// than a 256 MiB heap), and the build records the commit it was built from, which the built
// service reports (animal_store_build_info). Run on a copy of the project's sources, so that this
// checkout's dist/ is left alone.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { operatorNodeOptions } from './support/operations-doc.js';
import { scrape } from './support/prometheus.js';
import { ROOT, startServiceProcess } from './support/service-process.js';

const SERVICE_NODE_OPTIONS = operatorNodeOptions();

const copy = mkdtempSync(join(tmpdir(), 'animal-store-build-'));
afterAll(() => rmSync(copy, { recursive: true, force: true }));

const git = (...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', ...args], { cwd: copy, encoding: 'utf8' }).trim();

/** Runs the prestart in the copy with the service's NODE_OPTIONS, as `npm start` would. */
function prestart() {
  const run = spawnSync(process.execPath, ['scripts/build-if-stale.mjs'], {
    cwd: copy,
    env: { ...process.env, NODE_OPTIONS: SERVICE_NODE_OPTIONS },
    encoding: 'utf8',
    timeout: 240_000,
  });
  return { status: run.status, stderr: run.stderr };
}

const recordedCommit = () => (JSON.parse(readFileSync(join(copy, 'dist', 'build-info.json'), 'utf8')) as { commit: unknown }).commit;

describe("npm start's prestart under the service's NODE_OPTIONS", () => {
  it(
    'builds a fresh dist/ (the compiler does not inherit the 256 MiB heap) and records the commit, which the service reports',
    { timeout: 300_000 },
    async () => {
      for (const path of ['src', 'prisma', 'tsconfig.json', 'tsconfig.build.json', 'package.json', '.gitignore'])
        cpSync(join(ROOT, path), join(copy, path), { recursive: true });
      mkdirSync(join(copy, 'scripts'));
      cpSync(join(ROOT, 'scripts', 'build-if-stale.mjs'), join(copy, 'scripts', 'build-if-stale.mjs'));
      symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
      git('init', '--quiet');
      git('add', '.');
      git('commit', '--quiet', '-m', 'sources');
      const first = git('rev-parse', 'HEAD');

      const build = prestart();
      expect(build.stderr).toMatch(/Building dist\//);
      expect(build.stderr).not.toMatch(/heap out of memory|Allocation failed/);
      expect(build.status).toBe(0);
      expect(existsSync(join(copy, 'dist', 'start.js'))).toBe(true);
      expect(recordedCommit()).toBe(first);

      // The built service, with the same bounds, says what it runs.
      const service = await startServiceProcess(
        {
          NODE_OPTIONS: SERVICE_NODE_OPTIONS,
          API_KEYS: 'build-key-0123456789abcdef',
          LOG_LEVEL: 'info',
          DATABASE_URL: `file:${join(copy, 'built.db')}`,
        },
        { command: [process.execPath, join(copy, 'dist', 'start.js')], cwd: copy },
      );
      try {
        const info = (await scrape(service.baseUrl)).series('animal_store_build_info');
        const { version } = JSON.parse(readFileSync(join(copy, 'package.json'), 'utf8')) as { version: string };
        expect(info.map(({ labels, value }) => ({ labels, value }))).toEqual([
          { labels: { version, commit: first, node: process.version }, value: 1 },
        ]);
      } finally {
        expect(await service.stop()).toBe(0);
      }

      // A new commit that leaves the sources as they were: nothing compiled, the same dist/ now of that commit.
      git('commit', '--quiet', '--allow-empty', '-m', 'docs only');
      const second = git('rev-parse', 'HEAD');
      const again = prestart();
      expect(again.status).toBe(0);
      expect(again.stderr).not.toMatch(/Building/);
      expect(recordedCommit()).toBe(second);
    },
  );
});
