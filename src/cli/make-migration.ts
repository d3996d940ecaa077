// `npm run db:migration -- <name>`: rewrites each provider's schema from prisma/models.prisma and
// writes its next migration, offline.
import { createMigration } from '../db/migrations.js';
import { offlineDiffAdapter } from '../db/offline-diff-adapters.js';
import { writeProviderSchemas } from '../db/provider-schemas.js';
import { PROVIDERS, schemaLayout } from '../db/providers.js';

const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error('usage: npm run db:migration -- <name>   (lower-case letters, digits and _)');
  process.exit(2);
}

const rewritten = await writeProviderSchemas();
if (rewritten.length) console.log(`rewrote from prisma/models.prisma: ${rewritten.map((p) => `prisma/${p}/schema.prisma`).join(', ')}`);

const now = new Date(); // one timestamp, so both providers' folders have the same name
for (const provider of PROVIDERS) {
  const written = await createMigration(offlineDiffAdapter(provider), schemaLayout(provider), name, now);
  console.log(written ? `${provider}: wrote ${written}` : `${provider}: schema unchanged, no migration written`);
}
if (rewritten.length) console.log('run `npm run db:generate` to regenerate the clients');
