// Which Node lines the service runs on: exactly the ones its suite is run on (.ci/run), named once,
// in package.json's `engines`. better-sqlite3 13 (the SQLite driver) needs Node >= 22 and crashes
// on Node 20; versions before 13 crash on Node >= 24.19. @see docs/development.md#node-lines
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
    '(Linux x64), and npm scripts run on it. Elsewhere, install Node 22 or 24.'
  );
}
