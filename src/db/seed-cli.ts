// `npm run db:seed`: adds the sample inventory (src/db/seed.ts) where it is missing, on the
// database DATABASE_URL names. Running it again adds nothing.
//
// It does not migrate: migrating while the service has the database open fails (the schema
// engine cannot take its lock), and seeding is what one does beside a running `npm run dev`.
// The database is migrated by npm start / npm run dev / npm run db:migrate.
import { loadConfig } from '../config.js';
import { openDatabase } from './database.js';
import { SAMPLE_PETS, seedDatabase } from './seed.js';

/** Prisma's code for "the table does not exist in the current database". */
const TABLE_MISSING = 'P2021';

const { databaseUrl } = loadConfig();
const database = await openDatabase(databaseUrl);
try {
  const added = await seedDatabase(database.prisma);
  console.log(`added ${added} of ${SAMPLE_PETS.length} sample pets (${SAMPLE_PETS.length - added} were there already)`);
} catch (error) {
  if ((error as { code?: string }).code !== TABLE_MISSING) throw error;
  console.error('The database has no tables yet: run `npm run db:migrate` (or start the service) first.');
  process.exitCode = 1;
} finally {
  await database.close();
}
