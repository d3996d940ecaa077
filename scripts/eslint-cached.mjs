// `npm run lint`'s ESLint, with its cache used only for a tree it has seen whole. Our type-aware
// rules read other files' types, and ESLint keys its cache by each file's own content, so a plain
// `--cache` could keep a result that a change elsewhere made wrong (typescript-eslint#4694). Here
// the cache's name is a digest of every file git tracks or would track (paths and contents,
// package-lock.json with them): an unchanged tree (a rerun, CI's second Node line) reads the
// results, any change lints everything again. Without git, no cache. Node's own modules only.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ESLINT = join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js');
const CACHE_DIR = join(ROOT, 'node_modules', '.cache', 'animal-store', 'eslint');

/** A digest of the tree's files, or undefined where git cannot list them. */
function treeDigest() {
  let listed;
  try {
    listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return undefined;
  }
  const hash = createHash('sha256');
  for (const file of listed.toString().split('\0').filter(Boolean).sort()) {
    const path = join(ROOT, file);
    const stat = statSync(path, { throwIfNoEntry: false });
    hash.update(`${file}\0`);
    if (stat?.isFile()) hash.update(readFileSync(path));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 32);
}

const digest = treeDigest();
const cache = [];
if (digest) {
  mkdirSync(CACHE_DIR, { recursive: true });
  // Only this tree's results are kept.
  for (const name of readdirSync(CACHE_DIR)) if (name !== digest) rmSync(join(CACHE_DIR, name), { force: true });
  cache.push('--cache', '--cache-location', join(CACHE_DIR, digest));
}
const eslint = spawnSync(process.execPath, [ESLINT, ...cache, ...process.argv.slice(2)], { cwd: ROOT, stdio: 'inherit' });
process.exit(eslint.status ?? 1);
