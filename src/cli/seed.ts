// `npm run db:seed`: adds the missing sample pets (src/db/seed.ts). Migrates first, like npm start.
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
