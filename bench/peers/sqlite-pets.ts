// The peers' data access: the pets and api_keys tables on better-sqlite3, statements prepared once
// (as the bare baseline does), so that every peer's data access costs what the baseline's does and
// the comparison is of the stacks. Plain functions, no framework: each peer wraps it its own way.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { StoredKeys } from '../../src/auth/api-keys.js';
import type { NewPet, Pet, PetStatus } from '../../src/domain/pet-schemas.js';

/** Opens the file with the service's SQLite settings, and applies the service's migrations to a new one. */
export function openDatabase(file: string, migrationsDir: string): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'pets'").get()) {
    for (const entry of readdirSync(migrationsDir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .sort()) {
      db.exec(readFileSync(join(migrationsDir, entry.name, 'migration.sql'), 'utf8'));
    }
  }
  return db;
}

export interface PetsStore extends StoredKeys {
  list(limit: number, status?: PetStatus): Pet[];
  find(id: number): Pet | undefined;
  create(pet: NewPet): Pet;
}

const COLUMNS = 'id, name, category_id AS "categoryId", status';

/** The statements the peers run, prepared once on `db`. */
export function petsStore(db: Database.Database): PetsStore {
  const listAll = db.prepare<[number], Pet>(`SELECT ${COLUMNS} FROM pets ORDER BY id LIMIT ?`);
  const listByStatus = db.prepare<[PetStatus, number], Pet>(`SELECT ${COLUMNS} FROM pets WHERE status = ? ORDER BY id LIMIT ?`);
  const byId = db.prepare<[number], Pet>(`SELECT ${COLUMNS} FROM pets WHERE id = ?`);
  const insert = db.prepare<[string, number, PetStatus], Pet>(
    `INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING ${COLUMNS}`,
  );
  const keyByHash = db.prepare<[string], { id: number }>('SELECT id FROM api_keys WHERE hash = ? AND revoked_at IS NULL');
  return {
    list: (limit, status) => (status ? listByStatus.all(status, limit) : listAll.all(limit)),
    find: (id) => byId.get(id),
    create: (pet) => insert.all(pet.name, pet.categoryId, pet.status ?? 'available')[0]!,
    findActiveByHash: async (hash) => keyByHash.get(hash) ?? null,
  };
}
