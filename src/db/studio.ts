// `npm run studio`: Prisma Studio on the database DATABASE_URL names, SQLite or PostgreSQL.
// Studio refuses a relative SQLite URL (`file:./x.db` is an "unknown protocol" to it), so SQLite
// is handed the absolute form; a PostgreSQL URL is handed over as it is.
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../config.js';
import { migrateDatabase } from './database.js';
import { PROJECT_ROOT, providerOf, sqliteFilePath } from './providers.js';

const { databaseUrl } = loadConfig();
await migrateDatabase(databaseUrl); // so that Studio shows the tables even before the first start
const studioUrl = providerOf(databaseUrl) === 'sqlite' ? pathToFileURL(sqliteFilePath(databaseUrl)).href : databaseUrl;

const studio = spawn('npx', ['prisma', 'studio', '--url', studioUrl, ...process.argv.slice(2)], {
  cwd: PROJECT_ROOT,
  stdio: 'inherit',
});
studio.on('exit', (code) => process.exit(code ?? 0));
