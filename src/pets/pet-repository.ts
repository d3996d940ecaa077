// Pets data access, the only code touching the `pets` table: contract types out (numbers for int64),
// one statement per operation (src/db/sql.ts), inside a transaction or not.
import { statement, type SqlRow, type SqlSession } from '../db/sql.js';
import { DEFAULT_PET_STATUS, int64FromDatabase, type ListPetsInput, type NewPet, type Pet } from '../domain/pet-schemas.js';

export interface PetRepository {
  /** Ascending id, optional status, ids above `after`, at most `limit`. */
  list(query: ListPetsInput): Promise<Pet[]>;
  create(pet: NewPet): Promise<Pet>;
  findById(id: number): Promise<Pet | null>;
}

const PET_COLUMNS = 'id, name, category_id, status';

/**
 * Exported for tests of the query plans. A list is a key range, never OFFSET. The PostgreSQL status
 * list uses a row comparison: a generic plan for `status = $1 AND id > $2` would scan the primary key.
 */
export const PET_STATEMENTS = {
  list: statement('pets_list', `SELECT ${PET_COLUMNS} FROM pets WHERE id > ? ORDER BY id ASC LIMIT ?`),
  listByStatus: statement('pets_list_by_status', `SELECT ${PET_COLUMNS} FROM pets WHERE status = ? AND id > ? ORDER BY id ASC LIMIT ?`, {
    postgresql: `SELECT ${PET_COLUMNS} FROM pets WHERE status = $1 AND (status, id) > ($1, $2) ORDER BY status, id LIMIT $3`,
  }),
  insert: statement('pets_insert', `INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING ${PET_COLUMNS}`),
  byId: statement('pets_by_id', `SELECT ${PET_COLUMNS} FROM pets WHERE id = ?`),
};

function toPet(row: SqlRow): Pet {
  return {
    id: int64FromDatabase(row[0] as bigint),
    name: row[1] as string,
    categoryId: int64FromDatabase(row[2] as bigint),
    status: row[3] as Pet['status'],
  };
}

/** The pets of a session: the database's own (`Database.sql`) or a transaction's. */
export function createPetRepository(session: SqlSession): PetRepository {
  return {
    async list({ limit, status, after = 0 }) {
      const rows = status
        ? await session.query(PET_STATEMENTS.listByStatus, [status, after, limit])
        : await session.query(PET_STATEMENTS.list, [after, limit]);
      return rows.map(toPet);
    },

    async create({ name, categoryId, status = DEFAULT_PET_STATUS }) {
      const [row] = await session.query(PET_STATEMENTS.insert, [name, categoryId, status]);
      if (!row) throw new Error('INSERT … RETURNING returned no row');
      return toPet(row);
    },

    async findById(id) {
      const [row] = await session.query(PET_STATEMENTS.byId, [id]);
      return row ? toPet(row) : null;
    },
  };
}
