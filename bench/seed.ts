// Seeds a migrated pets table straight through the driver, in one statement or transaction: a
// million rows take seconds this way, where a million API calls would take many minutes. The
// service and the baseline get exactly the same rows, so their list answers are byte-for-byte
// comparable.
import Database from 'better-sqlite3';
import pg from 'pg';

const STATUSES = ['available', 'pending', 'sold'] as const;

/** Appends `count` pets to a SQLite file: `pet-<i>`, categories 1…7 and statuses in rotation. Returns the time taken (ms). */
export function seedPets(file: string, count: number): number {
  const started = performance.now();
  const db = new Database(file);
  try {
    db.pragma('busy_timeout = 5000');
    const insert = db.prepare('INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)');
    db.transaction(() => {
      for (let i = 0; i < count; i++) insert.run(`pet-${i}`, (i % 7) + 1, STATUSES[i % 3]);
    })();
  } finally {
    db.close();
  }
  return performance.now() - started;
}

/** The same rows in a PostgreSQL database (by URL), in the same order. Returns the time taken (ms). */
export async function seedPostgresPets(url: string, count: number): Promise<number> {
  const started = performance.now();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO pets (name, category_id, status)
       SELECT 'pet-' || i, (i % 7) + 1, ($2::text[])[i % 3 + 1]::"PetStatus" FROM generate_series(0, $1::int - 1) AS i ORDER BY i`,
      [count, STATUSES],
    );
    await client.query('ANALYZE pets');
  } finally {
    await client.end();
  }
  return performance.now() - started;
}

/** Runs one statement (CREATE or DROP DATABASE) on the PostgreSQL server of `serverUrl`. */
export async function onPostgresServer(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(`PostgreSQL is not reachable at ${serverUrl} (${(error as Error).message})`);
  }
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A fresh database `name` (lower case, word characters) on the server of `serverUrl`, dropped first if there: its URL. */
export async function freshPostgresDatabase(serverUrl: string, name: string): Promise<string> {
  const database = name.replace(/\W+/g, '_').toLowerCase();
  await onPostgresServer(serverUrl, `DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  await onPostgresServer(serverUrl, `CREATE DATABASE "${database}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.href;
}
