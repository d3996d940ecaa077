// `npm run db:seed`: migrates the database DATABASE_URL names, then adds the sample inventory
// (src/db/seed.ts) where it is missing. Running it again adds nothing.
import { loadConfig } from '../config.js';
import { migrateDatabase, openDatabase } from './database.js';
import { SAMPLE_PETS, seedDatabase } from './seed.js';

const { databaseUrl } = loadConfig();
await migrateDatabase(databaseUrl);
const database = await openDatabase(databaseUrl);
try {
  const added = await seedDatabase(database.prisma);
  console.log(`added ${added} of ${SAMPLE_PETS.length} sample pets (${SAMPLE_PETS.length - added} were there already)`);
} finally {
  await database.close();
}
