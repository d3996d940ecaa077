// The per-provider Prisma schemas, written from the one data model in prisma/models.prisma.
//
// Prisma fixes the datasource provider per schema file and generates one client per schema, so
// SQLite and PostgreSQL need a schema each; their models must not drift apart, or the two
// backends would serve different APIs. So the models are written once, and each provider's file
// is that text under a generated header, with the one difference the providers need (below).
import { readFile, writeFile } from 'node:fs/promises';
import { MODELS_PATH, PROVIDERS, schemaLayout, type Provider } from './providers.js';

/**
 * SQLite only makes a column its rowid (and so autoincrements it) when it is declared `INTEGER
 * PRIMARY KEY`: Prisma writes that for `Int @id`, but `BigInt @id` gives `BIGINT … PRIMARY KEY`,
 * where every insert fails on a null id. SQLite's INTEGER is 64-bit anyway, so `Int` there still
 * holds every int64 id. (On PostgreSQL `Int` would be a 32-bit SERIAL, hence BigInt in the models.)
 */
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

/** The text of prisma/<provider>/schema.prisma for the given data model. */
export function renderProviderSchema(provider: Provider, models: string): string {
  // The models file's own leading comment is about the file, not the schema: keep from the first block.
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
