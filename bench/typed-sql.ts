// `npx tsx bench/typed-sql.ts`: Prisma's TypedSQL (`$queryRawTyped`) against the service's
// driver-level statements (src/db/sql.ts, its pet repository) for the hot
// statements (a list of 20, a get, a create), on SQLite and PostgreSQL, in one process, one call
// at a time, rounds interleaved; medians of the rounds of the process's CPU time and of the wall
// time per call (µs). The typed queries are made
// with `makeTypedQueryFactory`, which is what `prisma generate --sql` writes into the client for
// each prisma/sql file (its generation needs Prisma's native schema engine and a live database:
// docs/architecture.md, "Where we depart from a library"); the rows are turned into the contract's
// Pet as the repository turns its own. BENCH_POSTGRES_URL as for npm run bench; CALLS, ROUNDS.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';

import { fileURLToPath } from 'node:url';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import { makeTypedQueryFactory } from '@prisma/client/runtime/client';
import pg from 'pg';
import { migrateDatabase, openDatabase, type Database } from '../src/db/database.js';
import { int64FromDatabase, type Pet } from '../src/domain/pet-schemas.js';
import { createPetRepository } from '../src/db/sql.js';
import { seedPets, seedPostgresPets } from './seed.js';

const CALLS = Number(process.env.CALLS ?? 2_000);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

/** The three statements as prisma/sql files would hold them (PostgreSQL's placeholders; SQLite's `?`). */
function typedQueries(postgres: boolean) {
  const p = (i: number) => (postgres ? `$${i}` : '?');
  const cast = postgres ? '::"PetStatus"' : '';
  return {
    list: makeTypedQueryFactory(`SELECT id, name, category_id, status FROM pets WHERE id > ${p(1)} ORDER BY id ASC LIMIT ${p(2)}`),
    byId: makeTypedQueryFactory(`SELECT id, name, category_id, status FROM pets WHERE id = ${p(1)}`),
    insert: makeTypedQueryFactory(
      `INSERT INTO pets (name, category_id, status) VALUES (${p(1)}, ${p(2)}, ${p(3)}${cast}) RETURNING id, name, category_id, status`,
    ),
  };
}

interface Row {
  id: bigint | number;
  name: string;
  category_id: bigint | number;
  status: Pet['status'];
}
const toPet = (row: Row): Pet => ({
  id: int64FromDatabase(BigInt(row.id)),
  name: row.name,
  categoryId: int64FromDatabase(BigInt(row.category_id)),
  status: row.status,
});

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, 'dist', 'bench-typed-sql');

/** What `$queryRawTyped` needs of a client. */
interface TypedClient {
  $queryRawTyped(query: ReturnType<ReturnType<typeof makeTypedQueryFactory>>): Promise<unknown[]>;
  $disconnect(): Promise<void>;
}

/**
 * A Prisma client of the provider with the `typedSql` preview feature ($queryRawTyped refuses to
 * run without it): the service's schema with the feature switched on, generated offline (no --sql:
 * that step needs the native schema engine) into dist/bench-typed-sql/<provider>.
 */
async function typedSqlClient(provider: 'sqlite' | 'postgresql', adapter: unknown): Promise<TypedClient> {
  const dir = join(OUT, provider);
  mkdirSync(dir, { recursive: true });
  const schema = readFileSync(join(ROOT, 'prisma', provider, 'schema.prisma'), 'utf8').replace(
    /output\s*=\s*"[^"]*"/,
    `output = "${join(dir, 'client')}"\n  previewFeatures = ["typedSql"]`,
  );
  writeFileSync(join(dir, 'schema.prisma'), schema);
  execFileSync(join(ROOT, 'node_modules', '.bin', 'prisma'), ['generate', '--schema', join(dir, 'schema.prisma')], {
    cwd: ROOT,
    env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: join(ROOT, 'package.json') },
    stdio: 'ignore',
  });
  const { PrismaClient } = (await import(join(dir, 'client', 'client.ts'))) as { PrismaClient: new (options: unknown) => TypedClient };
  return new PrismaClient({ adapter });
}

async function measure(name: string, database: Database, prisma: TypedClient, postgres: boolean): Promise<void> {
  const pets = createPetRepository(database.sql);
  const typed = typedQueries(postgres);
  const steps: Record<string, () => Promise<unknown>> = {
    'list 20, driver statement': () => pets.list({ limit: 20 }),
    'list 20, $queryRawTyped': async () => ((await prisma.$queryRawTyped(typed.list(0, 20))) as Row[]).map(toPet),
    'get, driver statement': () => pets.findById(500),
    'get, $queryRawTyped': async () => ((await prisma.$queryRawTyped(typed.byId(500))) as Row[]).map(toPet)[0],
    'create, driver statement': () => pets.create({ name: 'typed', categoryId: 7, status: 'available' }),
    'create, $queryRawTyped': async () => ((await prisma.$queryRawTyped(typed.insert('typed', 7, 'available'))) as Row[]).map(toPet)[0],
  };
  // Both answer the same pet.
  const [a, b] = [await steps['get, driver statement']!(), await steps['get, $queryRawTyped']!()];
  if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`different answers: ${JSON.stringify(a)} ${JSON.stringify(b)}`);
  const wall: Record<string, number[]> = {};
  const cpu: Record<string, number[]> = {};
  for (let round = 0; round <= ROUNDS; round++) {
    for (const [label, step] of Object.entries(steps)) {
      const started = performance.now();
      const cpuBefore = process.cpuUsage();
      for (let i = 0; i < CALLS; i++) await step();
      const used = process.cpuUsage(cpuBefore);
      // Round 0 warms up (JIT, Prisma's query compiler, prepared statements).
      if (round === 0) continue;
      (wall[label] ??= []).push(((performance.now() - started) * 1000) / CALLS);
      (cpu[label] ??= []).push((used.user + used.system) / CALLS);
    }
  }
  const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;
  const figure = (values: number[]) => `${median(values).toFixed(1)} (${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)})`;
  for (const label of Object.keys(steps))
    console.log(`${name.padEnd(10)} ${label.padEnd(28)} CPU ${figure(cpu[label]!)} µs/call, wall ${figure(wall[label]!)} µs/call`);
}

const settings = { databasePoolSize: 10, databaseConnectTimeoutMs: 5_000, databaseQueryTimeoutMs: 10_000 };
const dir = mkdtempSync(join(tmpdir(), 'typed-sql-'));
try {
  const file = join(dir, 'pets.db');
  await migrateDatabase(`file:${file}`);
  seedPets(file, 1_000);
  const sqlite = await openDatabase({ ...settings, databaseUrl: `file:${file}` });
  const sqlitePrisma = await typedSqlClient('sqlite', new PrismaBetterSqlite3({ url: file }));
  await measure('sqlite', sqlite, sqlitePrisma, false);
  await sqlitePrisma.$disconnect();
  await sqlite.close();

  const name = `animal_store_typed_sql_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  try {
    const url = new URL(POSTGRES_URL);
    url.pathname = `/${name}`;
    await migrateDatabase(url.href);
    await seedPostgresPets(url.href, 1_000);
    const postgres = await openDatabase({ ...settings, databaseUrl: url.href });
    const postgresPrisma = await typedSqlClient('postgresql', new PrismaPg({ connectionString: url.href, max: 10 }));
    await measure('postgresql', postgres, postgresPrisma, true);
    await postgresPrisma.$disconnect();
    await postgres.close();
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`load average: ${readFileSync('/proc/loadavg', 'utf8').trim().split(' ').slice(0, 3).join(' ')}`);
