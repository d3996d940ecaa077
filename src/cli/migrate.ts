// `npm run db:migrate`: applies pending migrations to the database DATABASE_URL names (the same
// step `npm start` runs first), offline.
import { loadConfig } from '../config.js';
import { migrateDatabase } from '../db/database.js';

const { databaseUrl } = loadConfig();
const applied = await migrateDatabase(databaseUrl);
console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
