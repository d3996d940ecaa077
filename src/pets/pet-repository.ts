// Data access for pets: the only code that touches the `pets` table. It speaks the contract's
// types (numbers for int64) and keeps the database's (64-bit columns) behind it.
//
// One implementation of each operation, whatever the database and whether or not it runs inside a
// transaction (an idempotent create does): a statement written once and prepared once per
// connection (src/db/sql.ts), not a Prisma query (docs/benchmarks.md: what Prisma's pipeline costs
// per request, and the decision). The columns are the ones prisma/models.prisma maps.
import { int64FromDatabase } from '../domain/int64.js';
import { statement, type SqlRow, type SqlSession } from '../db/sql.js';
import { DEFAULT_PET_STATUS, type ListPetsInput, type NewPet, type Pet } from '../domain/pet-schemas.js';

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
 *
 * The status list on PostgreSQL says the same as a row comparison, `(status, id) > ($1, $2)`: a
 * prepared statement there may be planned once for any values (a generic plan), and for
 * `status = $1 AND id > $2` that plan walks the primary key and filters on status (it cannot know
 * how rare the status is), reading the whole table for a rare one. The row comparison is a range
 * of the (status, id) index alone, whatever the values. SQLite does not use a row comparison to
 * start an index range, so it keeps the plain form (test/rest/list-pagination.test.ts checks
 * both plans).
 */
export const PET_STATEMENTS = {
  list: statement('pets_list', `SELECT ${PET_COLUMNS} FROM pets WHERE id > ? ORDER BY id ASC LIMIT ?`),
  listByStatus: statement('pets_list_by_status', `SELECT ${PET_COLUMNS} FROM pets WHERE status = ? AND id > ? ORDER BY id ASC LIMIT ?`, {
    postgresql: `SELECT ${PET_COLUMNS} FROM pets WHERE status = $1 AND (status, id) > ($1, $2) ORDER BY status, id LIMIT $3`,
  }),
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
