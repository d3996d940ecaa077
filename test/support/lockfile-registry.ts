// An npm registry on loopback that knows exactly the packages of this repository's package-lock.json
// and serves their tarballs from npm's own cache (<cache>/_cacache, where `npm ci` put them): an app's `npm install`
// of those packages works with no network, as written, by pointing npm_config_registry here.
// Packuments carry what npm reads to resolve (dependencies, peers, bin, engines, os, cpu, dist);
// a package that is not in the lock file, or whose tarball is not in the cache, is a 404.
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';

export interface LockfileRegistry {
  url: string;
  close(): Promise<void>;
}

type LockEntry = Record<string, unknown> & { version?: string; integrity?: string };

const MANIFEST_FIELDS = [
  'dependencies',
  'optionalDependencies',
  'peerDependencies',
  'peerDependenciesMeta',
  'bin',
  'engines',
  'os',
  'cpu',
  'libc',
  'license',
];

/** Dotted versions compared numerically (prerelease tags aside): enough to pick `latest`. */
const byVersion = (a: string, b: string) => {
  const [x, y] = [a, b].map((version) => version.split(/[.-]/).map((part) => Number(part) || 0));
  for (let i = 0; i < Math.max(x!.length, y!.length); i++) if ((x![i] ?? 0) !== (y![i] ?? 0)) return (x![i] ?? 0) - (y![i] ?? 0);
  return 0;
};

export async function startLockfileRegistry(lockfile: string): Promise<LockfileRegistry> {
  const lock = JSON.parse(await readFile(lockfile, 'utf8')) as { packages: Record<string, LockEntry> };
  const cache = execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim();
  const versions = new Map<string, Map<string, LockEntry>>();
  for (const [path, entry] of Object.entries(lock.packages)) {
    const at = path.lastIndexOf('node_modules/');
    if (at === -1 || !entry.version || !entry.integrity?.startsWith('sha512-')) continue;
    const name = path.slice(at + 'node_modules/'.length);
    if (!versions.has(name)) versions.set(name, new Map());
    versions.get(name)!.set(entry.version, entry);
  }

  let base = '';
  const server: Server = createServer((request, response) => {
    void (async () => {
      const path = decodeURIComponent((request.url ?? '/').split('?')[0]!).slice(1);
      if (path.startsWith('-/tarball/')) {
        const hex = path.slice('-/tarball/'.length);
        const file = join(cache, '_cacache', 'content-v2', 'sha512', hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
        const bytes = await readFile(file).catch(() => null);
        if (!bytes) return response.writeHead(404).end();
        return response.writeHead(200, { 'content-type': 'application/octet-stream' }).end(bytes);
      }
      const known = versions.get(path);
      if (!known) return response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
      const manifests = Object.fromEntries(
        [...known].map(([version, entry]) => {
          const hex = Buffer.from(entry.integrity!.slice('sha512-'.length), 'base64').toString('hex');
          const fields = Object.fromEntries(MANIFEST_FIELDS.filter((field) => field in entry).map((field) => [field, entry[field]]));
          return [version, { name: path, version, ...fields, dist: { tarball: `${base}/-/tarball/${hex}`, integrity: entry.integrity } }];
        }),
      );
      const latest = [...known.keys()].sort(byVersion).at(-1)!;
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ name: path, 'dist-tags': { latest }, versions: manifests }));
    })().catch(() => response.writeHead(500).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('registry has no port');
  base = `http://127.0.0.1:${address.port}`;
  return { url: `${base}/`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
