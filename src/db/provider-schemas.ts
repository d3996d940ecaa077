// Writes each provider's Prisma schema from prisma/models.prisma, so the two clients never drift apart.
import { readFile, writeFile } from 'node:fs/promises';
import { MODELS_PATH, PROVIDERS, schemaLayout, type Provider } from './providers.js';

/** SQLite autoincrements only `INTEGER PRIMARY KEY`; its INTEGER is 64-bit, so `Int` holds an int64 id. */
const SQLITE_AUTOINCREMENT_ID = /^(\s+\w+\s+)BigInt(\s+@id\s+@default\(autoincrement\(\)\))/gm;

function header(provider: Provider): string {
  return `// GENERATED from prisma/models.prisma by \`npm run db:migration -- <name>\`: edit that file, not this one.
// Migrations: prisma/${provider}/migrations (applied offline at start-up, see src/db/migrations.ts).

generator client {
  provider     = "prisma-client"
  output       = "../../src/db/generated/${provider}"
  moduleFormat = "esm"
}

datasource db {
  provider = "${provider}"
}
`;
}

export function renderProviderSchema(provider: Provider, models: string): string {
  const body = models.slice(models.search(/^(enum|model|type|view)\s/m));
  const providerBody = provider === 'sqlite' ? body.replace(SQLITE_AUTOINCREMENT_ID, '$1Int   $2') : body;
  return `${header(provider)}\n${providerBody}`;
}

/** Rewrites every provider's schema file from prisma/models.prisma; returns the providers whose file changed. */
export async function writeProviderSchemas(): Promise<Provider[]> {
  const models = await readFile(MODELS_PATH, 'utf8');
  const changed: Provider[] = [];
  for (const provider of PROVIDERS) {
    const { schemaPath } = schemaLayout(provider);
    const rendered = renderProviderSchema(provider, models);
    const current = await readFile(schemaPath, 'utf8').catch(() => null);
    if (current !== rendered) {
      await writeFile(schemaPath, rendered);
      changed.push(provider);
    }
  }
  return changed;
}
