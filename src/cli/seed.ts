// `npm run db:seed`: adds the sample inventory (src/db/seed.ts) where it is missing, on the
// database DATABASE_URL names. Running it again adds nothing.
//
// It migrates first, like npm start: a no-op on an up-to-date database, so it works beside a
// running `npm run dev` too.
import { loadConfig } from '../config.js';
import { migrateDatabase, openDatabase } from '../db/database.js';
import { SAMPLE_PETS, seedDatabase } from '../db/seed.js';

const config = loadConfig();
await migrateDatabase(config.databaseMigrationUrl);
const database = await openDatabase(config);
try {
  const added = await seedDatabase(database.prisma);
  console.log(`added ${added} of ${SAMPLE_PETS.length} sample pets (${SAMPLE_PETS.length - added} were there already)`);
} finally {
  await database.close();
}
