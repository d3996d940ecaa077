// `npm start`'s prestart, and `npm run build` (`--always`): dist/ is rebuilt only when it was not
// built from the sources there now (or always, for `npm run build`). A build records a digest of
// what it compiled (src/, with the Prisma clients generated on install, and the tsconfig files) in
// dist/.source-digest; when it matches, nothing runs, so a production install (built elsewhere,
// `npm ci --omit=dev`, no TypeScript) starts without a compiler. Plain JavaScript with Node's own
// modules only, for that reason. It also records the git commit of those sources in
// dist/build-info.json (src/config.ts reads it: the metric animal_store_build_info), so that a copy
// without .git still says what it was built from.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import console from 'node:console';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIGEST_FILE = join(ROOT, 'dist', '.source-digest');
const BUILD_INFO_FILE = join(ROOT, 'dist', 'build-info.json');
const INPUTS = ['src', 'tsconfig.json', 'tsconfig.build.json'];
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
/** A devDependency the build needs: without it this is a production install (`npm ci --omit=dev`). */
const BUILD_TYPES = join(ROOT, 'node_modules', '@types', 'better-sqlite3');

/** Every file under `path` (or `path` itself), sorted, relative to the project. */
function filesOf(path) {
  const full = join(ROOT, path);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return [path];
  return readdirSync(full, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
    .sort();
}

/** A digest of the files a build compiles: their paths and contents. */
function sourceDigest() {
  const hash = createHash('sha256');
  for (const file of INPUTS.flatMap(filesOf))
    hash
      .update(`${file}\0`)
      .update(readFileSync(join(ROOT, file)))
      .update('\0');
  return hash.digest('hex');
}

const recorded = () => (existsSync(DIGEST_FILE) ? readFileSync(DIGEST_FILE, 'utf8').trim() : undefined);

/**
 * The commit of the sources (`<hash>-dirty` when the inputs differ from it), or null outside a
 * git checkout of this project (a copy, an archive, no git installed).
 */
function sourceCommit() {
  const git = (...args) => spawnSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const head = git('rev-parse', '--show-toplevel', 'HEAD');
  if (head.status !== 0) return null;
  const [top, commit] = head.stdout.trim().split('\n');
  if (!top || !commit || realpathSync(top) !== realpathSync(ROOT)) return null;
  const changes = git('status', '--porcelain', '--', ...INPUTS);
  return changes.status === 0 && changes.stdout.trim() === '' ? commit : `${commit}-dirty`;
}

const recordedCommit = () => (existsSync(BUILD_INFO_FILE) ? JSON.parse(readFileSync(BUILD_INFO_FILE, 'utf8')).commit : undefined);
const recordBuild = (commit = sourceCommit()) => {
  writeFileSync(DIGEST_FILE, `${sourceDigest()}\n`);
  writeFileSync(BUILD_INFO_FILE, `${JSON.stringify({ commit })}\n`);
};

const always = process.argv.includes('--always');
if (always || recorded() !== sourceDigest() || !existsSync(join(ROOT, 'dist', 'start.js'))) {
  if (!existsSync(TSC) || !existsSync(BUILD_TYPES)) {
    console.error(
      'dist/ is missing or was built from other sources, and the devDependencies that build it are not installed here (a production install).\n' +
        'Build where the devDependencies are (`npm ci && npm run build`) and copy that dist/ here (docs/operations.md, "Deploying").',
    );
    process.exit(1);
  }
  // Said before the compiler's silent seconds, so that a first start does not look stuck.
  if (!always)
    console.error(
      'Building dist/ from src/ (the first start, or the sources changed since the last build): TypeScript takes a few seconds…',
    );
  // Without the service's NODE_OPTIONS: its memory bounds (--max-old-space-size=256, docs/operations.md)
  // are too small for the compiler, which would run out of heap before the service ever started.
  const { NODE_OPTIONS: _serviceOptions, ...compilerEnv } = process.env;
  const build = spawnSync(process.execPath, [TSC, '--build', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit', env: compilerEnv });
  if (build.status !== 0) process.exit(build.status ?? 1);
  recordBuild();
} else {
  // The same sources at another commit (a change elsewhere in the repository): the same dist/, said to be of this one.
  const commit = sourceCommit();
  if (commit !== null && commit !== recordedCommit()) recordBuild(commit);
}
