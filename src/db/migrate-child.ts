// Child of migrate-in-child.ts: applies the migrations for { databaseUrl }, reports, exits.
import { migrateDatabase } from './database.js';
import type { MigrationOutcome } from './migrate-in-child.js';

async function outcomeOf(databaseUrl: string): Promise<MigrationOutcome> {
  try {
    return { applied: await migrateDatabase(databaseUrl) };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return {
      error: { message: error instanceof Error ? error.message : String(error), code: typeof code === 'string' ? code : undefined },
    };
  }
}

process.once('message', (message: { databaseUrl: string }) => {
  void outcomeOf(message.databaseUrl).then((outcome) => process.send!(outcome, () => process.exit(0)));
});
