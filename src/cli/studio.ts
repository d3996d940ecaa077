// `npm run studio`: Prisma Studio on the database DATABASE_URL names, SQLite or PostgreSQL, on a
// fixed port (STUDIO_DEFAULT_PORT unless `-- --port N` is given) and without opening a browser
// unless `-- --browser <name>` says so. Studio refuses a relative SQLite URL (`file:./x.db` is an
// "unknown protocol" to it), so SQLite is handed the absolute form.
// Prisma's CLI runs as this process's only child, on this Node: SIGTERM/SIGINT reach it, and this
// exits with its code once it has stopped (`npx` between them would keep Studio listening).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../config.js';
import { migrateDatabase } from '../db/database.js';
import { PROJECT_ROOT, providerOf, sqliteFilePath } from '../db/providers.js';

/** Prisma's own documented example port: where `npm run studio` always opens unless told otherwise. */
export const STUDIO_DEFAULT_PORT = 5555;

const userArgs = process.argv.slice(2);
const has = (...flags: string[]) => userArgs.some((arg) => flags.includes(arg.split('=')[0]!));
const defaults = [
  ...(has('--port', '-p') ? [] : ['--port', String(STUDIO_DEFAULT_PORT)]),
  ...(has('--browser', '-b') ? [] : ['--browser', 'none']),
];

// Through DATABASE_DIRECT_URL when set: Studio keeps a session of its own, which a transaction pooler does not.
const { databaseMigrationUrl: databaseUrl } = loadConfig();
await migrateDatabase(databaseUrl); // so that Studio shows the tables even before the first start
const studioUrl = providerOf(databaseUrl) === 'sqlite' ? pathToFileURL(sqliteFilePath(databaseUrl)).href : databaseUrl;

/** The value of `--port N`, `--port=N`, `-p N` among the user's arguments, or the default. */
function studioPort(): string {
  for (const [index, arg] of userArgs.entries()) {
    const [flag, value] = arg.split('=');
    if (flag === '--port' || flag === '-p') return value ?? userArgs[index + 1] ?? String(STUDIO_DEFAULT_PORT);
  }
  return String(STUDIO_DEFAULT_PORT);
}
// Studio opens on the first table in alphabetical order (idempotency_records); its address keeps
// the view in the fragment, so this link opens on the pets.
const schema = providerOf(databaseUrl) === 'sqlite' ? 'main' : (new URL(databaseUrl).searchParams.get('schema') ?? 'public');
console.log(`Prisma Studio: http://localhost:${studioPort()}/#schema=${schema}&table=pets&view=table (the pets table)`);

const prismaCli = createRequire(import.meta.url).resolve('prisma/build/index.js');
const studio = spawn(process.execPath, [prismaCli, 'studio', '--url', studioUrl, ...defaults, ...userArgs], {
  cwd: PROJECT_ROOT,
  stdio: 'inherit',
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => studio.kill(signal));
studio.on('exit', (code, signal) => process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0)));
