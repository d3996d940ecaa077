// `npm run db:migration -- <name>`: writes the next migration for the schema in prisma/, offline.
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { createMigration } from './migrations.js';
import { schemaLayout } from './providers.js';

const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error('usage: npm run db:migration -- <name>   (lower-case letters, digits and _)');
  process.exit(2);
}

// The diff runs from schema to schema; the in-memory database is only there to satisfy the engine.
const written = await createMigration(new PrismaBetterSqlite3({ url: ':memory:' }), schemaLayout('sqlite'), name);
console.log(written ? `sqlite: wrote ${written}` : 'sqlite: schema unchanged, no migration written');
