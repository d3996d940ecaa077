// `npm run keys -- create --name <n> | list | revoke --name <n>`: the API keys in DATABASE_URL's database.
// `create` prints the key once, alone on stdout's last line. @see docs/security.md "API keys"
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { migrateDatabase, openDatabase } from '../db/database.js';
import { createApiKeyStore, DuplicateKeyNameError } from '../auth/api-key-store.js';

const USAGE = 'usage: npm run keys -- create --name <name> | list | revoke --name <name>';
const NAME = /^[\w.-]{1,64}$/;

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

const { positionals, values } = parseArgs({ allowPositionals: true, options: { name: { type: 'string' } } });
const [command] = positionals;
if (command === 'create' || command === 'revoke') {
  if (!values.name || !NAME.test(values.name)) fail(`${USAGE}\n--name: 1 to 64 letters, digits, '.', '_' or '-'`);
} else if (command !== 'list') {
  fail(USAGE);
}

const config = loadConfig();
await migrateDatabase(config.databaseMigrationUrl);
const database = await openDatabase(config);
const keys = createApiKeyStore(database.prisma);
const iso = (date: Date | null) => (date ? date.toISOString() : '-');

try {
  if (command === 'create') {
    const { key, record } = await keys.create(values.name!);
    console.error(`Created API key "${record.name}" (id ${record.id}). It is shown once, below; only its digest is kept.`);
    console.log(key);
  } else if (command === 'revoke') {
    if (!(await keys.revoke(values.name!))) fail(`No active key is named "${values.name}".`);
    console.log(`Revoked API key "${values.name}".`);
  } else {
    const rows = await keys.list();
    console.log(['name', 'id', 'created', 'last used', 'revoked'].join('\t'));
    for (const row of rows) {
      console.log([row.name, row.id, iso(row.createdAt), iso(row.lastUsedAt), iso(row.revokedAt)].join('\t'));
    }
  }
} catch (error) {
  if (error instanceof DuplicateKeyNameError) fail(error.message);
  throw error;
} finally {
  await database.close();
}
