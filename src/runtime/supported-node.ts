// Which Node releases the service runs on, named once, in package.json's `engines`: each supported
// line from its lowest working release, which is the one .ci/run runs the suite on. better-sqlite3
// 13 (the SQLite driver) needs Node-API 10: Node 20 and Node 22 before 22.14 crash loading it.
// @see docs/development.md#node-lines
import { readFileSync } from 'node:fs';
import semver from 'semver';

/** package.json's `engines.node` (read from the file: the same path from src/ and dist/). */
export function supportedNodeRange(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } };
  return manifest.engines.node;
}

/** Why this Node cannot run the service, or undefined when it can. */
export function unsupportedNodeMessage(version: string, range: string, executable: string): string | undefined {
  if (semver.satisfies(version, range)) return undefined;
  return (
    `Animal Store runs on Node ${range} (package.json "engines"), not ${version} (${executable}).\n` +
    'Start it through npm (`npm start`, `npm run dev`): `npm ci` installs Node 24 into node_modules/.bin ' +
    '(Linux x64), and npm scripts run on it. Elsewhere, install a Node release that range accepts.'
  );
}
