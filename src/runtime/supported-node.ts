// The supported Node lines, named once in package.json's `engines` (better-sqlite3 13 needs Node-API 10).
// @see docs/development.md "Node lines"
import { readFileSync } from 'node:fs';
import semver from 'semver';

/** Read from the file: the same path from src/ and dist/. */
export function supportedNodeRange(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } };
  return manifest.engines.node;
}

export function unsupportedNodeMessage(version: string, range: string, executable: string): string | undefined {
  if (semver.satisfies(version, range)) return undefined;
  return (
    `Animal Store runs on Node ${range} (package.json "engines"), not ${version} (${executable}).\n` +
    'Start it through npm (`npm start`, `npm run dev`): `npm ci` installs Node 24 into node_modules/.bin ' +
    '(Linux x64), and npm scripts run on it. Elsewhere, install a Node release that range accepts.'
  );
}
