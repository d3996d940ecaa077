// Data access for pets: the only code that touches the `pets` table. It speaks the contract's
// types (numbers for int64) and keeps the database's (64-bit columns) behind it.
//
// One implementation of each operation, whatever the database and whether or not it runs inside a
// transaction (an idempotent create does): a statement written once and prepared once per
// connection (src/db/sql.ts), not a Prisma query (docs/benchmarks.md: what Prisma's pipeline costs
// per request, and the decision). The columns are the ones prisma/models.prisma maps.
import { int64FromDatabase } from '../api/int64.js';
import { statement, type SqlRow, type SqlSession } from '../db/sql.js';
import { DEFAULT_PET_STATUS, type ListPetsInput, type NewPet, type Pet } from './pet-schemas.js';

export interface PetRepository {
  /**
   * Pets in ascending id order (creation order), optionally with one status, only those with an
   * id above `after` when given, at most `limit`.
   */
  list(query: ListPetsInput): Promise<Pet[]>;
  create(pet: NewPet): Promise<Pet>;
  findById(id: number): Promise<Pet | null>;
}

/** The columns of a Pet, in this order in every result (models.prisma: categoryId is `category_id`). */
const PET_COLUMNS = 'id, name, category_id, status';

/**
 * The statements, exported so that tests can ask the databases how they run them. A list is a
 * range of the primary key (`id > ?`), or of the (status, id) index with a status, read in order
 * and stopped at LIMIT: the same cost on page 1 and page 1,000, no OFFSET. Without `after` the
 * range starts at 0, below every id.
 */
export const PET_STATEMENTS = {
  list: statement('pets_list', `SELECT ${PET_COLUMNS} FROM pets WHERE id > ? ORDER BY id ASC LIMIT ?`),
  listByStatus: statement('pets_list_by_status', `SELECT ${PET_COLUMNS} FROM pets WHERE status = ? AND id > ? ORDER BY id ASC LIMIT ?`),
  insert: statement('pets_insert', `INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING ${PET_COLUMNS}`),
  byId: statement('pets_by_id', `SELECT ${PET_COLUMNS} FROM pets WHERE id = ?`),
};

/** A result row in PET_COLUMNS order. */
function toPet(row: SqlRow): Pet {
  return {
    id: int64FromDatabase(row[0] as bigint),
    name: row[1] as string,
    categoryId: int64FromDatabase(row[2] as bigint),
    status: row[3] as Pet['status'],
  };
}

/** The pets of a session: the database's own (`Database.sql`), or a transaction's. */
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
