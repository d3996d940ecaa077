// `npm run db:migrate`: applies pending migrations (through DATABASE_DIRECT_URL when set), offline.
import { loadConfig } from '../config.js';
import { migrateDatabase } from '../db/database.js';

const { databaseMigrationUrl } = loadConfig();
const applied = await migrateDatabase(databaseMigrationUrl);
console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
