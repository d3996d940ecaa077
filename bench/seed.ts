// Seeds a migrated pets table straight through better-sqlite3, in one transaction: a million rows
// take seconds this way, where a million API calls would take many minutes. The service and the
// baseline get exactly the same rows, so their list answers are byte-for-byte comparable.
import Database from 'better-sqlite3';

const STATUSES = ['available', 'pending', 'sold'] as const;

/** Appends `count` pets: `pet-<i>`, categories 1…7 and statuses in rotation. Returns the time taken (ms). */
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
