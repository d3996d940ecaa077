// The pets and api_keys tables on better-sqlite3, statements prepared once (as the bare baseline
// does): the peer's data access costs what the baseline's does, so the comparison is of the stacks.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Inject, Injectable } from '@nestjs/common';
import Database from 'better-sqlite3';
import type { StoredKeys } from '../../../src/auth/api-keys.js';
import type { NewPet, Pet, PetStatus } from '../../../src/domain/pet-schemas.js';

export const DATABASE = Symbol('DATABASE');

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

const COLUMNS = 'id, name, category_id AS "categoryId", status';

@Injectable()
export class PetsRepository implements StoredKeys {
  private readonly listAll: Database.Statement<[number], Pet>;
  private readonly listByStatus: Database.Statement<[PetStatus, number], Pet>;
  private readonly byId: Database.Statement<[number], Pet>;
  private readonly insert: Database.Statement<[string, number, PetStatus], Pet>;
  private readonly keyByHash: Database.Statement<[string], { id: number }>;

  constructor(@Inject(DATABASE) db: Database.Database) {
    this.listAll = db.prepare(`SELECT ${COLUMNS} FROM pets ORDER BY id LIMIT ?`);
    this.listByStatus = db.prepare(`SELECT ${COLUMNS} FROM pets WHERE status = ? ORDER BY id LIMIT ?`);
    this.byId = db.prepare(`SELECT ${COLUMNS} FROM pets WHERE id = ?`);
    this.insert = db.prepare(`INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING ${COLUMNS}`);
    this.keyByHash = db.prepare('SELECT id FROM api_keys WHERE hash = ? AND revoked_at IS NULL');
  }

  list(limit: number, status?: PetStatus): Pet[] {
    return status ? this.listByStatus.all(status, limit) : this.listAll.all(limit);
  }

  find(id: number): Pet | undefined {
    return this.byId.get(id);
  }

  create(pet: NewPet): Pet {
    return this.insert.all(pet.name, pet.categoryId, pet.status ?? 'available')[0]!;
  }

  async findActiveByHash(hash: string): Promise<{ id: number } | null> {
    return this.keyByHash.get(hash) ?? null;
  }
}
