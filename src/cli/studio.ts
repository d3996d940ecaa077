// `npm run studio`: Prisma Studio on DATABASE_URL's database, on a fixed port, no browser unless asked.
// Prisma's CLI is our only child (no `npx` between), so signals reach it. @see docs/development.md
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../config.js';
import { migrateDatabase } from '../db/database.js';
import { PROJECT_ROOT, providerOf, sqliteFilePath } from '../db/providers.js';

/** Prisma's own documented example port. */
export const STUDIO_DEFAULT_PORT = 5555;

const userArgs = process.argv.slice(2);
const has = (...flags: string[]) => userArgs.some((arg) => flags.includes(arg.split('=')[0]!));
const defaults = [
  ...(has('--port', '-p') ? [] : ['--port', String(STUDIO_DEFAULT_PORT)]),
  ...(has('--browser', '-b') ? [] : ['--browser', 'none']),
];

// Studio keeps a session, which a transaction pooler does not: DATABASE_DIRECT_URL when set.
const { databaseMigrationUrl: databaseUrl } = loadConfig();
await migrateDatabase(databaseUrl); // so that Studio shows the tables even before the first start
const studioUrl = providerOf(databaseUrl) === 'sqlite' ? pathToFileURL(sqliteFilePath(databaseUrl)).href : databaseUrl;

function studioPort(): string {
  for (const [index, arg] of userArgs.entries()) {
    const [flag, value] = arg.split('=');
    if (flag === '--port' || flag === '-p') return value ?? userArgs[index + 1] ?? String(STUDIO_DEFAULT_PORT);
  }
  return String(STUDIO_DEFAULT_PORT);
}
// Studio opens on the first table alphabetically; the fragment opens it on the pets.
const schema = providerOf(databaseUrl) === 'sqlite' ? 'main' : (new URL(databaseUrl).searchParams.get('schema') ?? 'public');
console.log(`Prisma Studio: http://localhost:${studioPort()}/#schema=${schema}&table=pets&view=table (the pets table)`);

const prismaCli = createRequire(import.meta.url).resolve('prisma/build/index.js');
const studio = spawn(process.execPath, [prismaCli, 'studio', '--url', studioUrl, ...defaults, ...userArgs], {
  cwd: PROJECT_ROOT,
  stdio: 'inherit',
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => studio.kill(signal));
studio.on('exit', (code, signal) => process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0)));
