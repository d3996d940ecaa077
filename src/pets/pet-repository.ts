// Data access for pets: the only code that touches the `pets` table. It speaks the contract's
// types (numbers for int64) and keeps Prisma's (bigint columns) behind it.
import type { PrismaClient } from '../db/database.js';
import { int64FromDatabase } from '../api/int64.js';
import { DEFAULT_PET_STATUS, type ListPetsInput, type NewPet, type Pet } from './pet-schemas.js';

export interface PetRepository {
  /** Pets in ascending id order (creation order), optionally with one status, at most `limit`. */
  list(query: ListPetsInput): Promise<Pet[]>;
  create(pet: NewPet): Promise<Pet>;
  findById(id: number): Promise<Pet | null>;
}

interface PetRow {
  id: number | bigint;
  name: string;
  categoryId: bigint;
  status: Pet['status'];
}

function toPet(row: PetRow): Pet {
  return {
    id: int64FromDatabase(row.id),
    name: row.name,
    categoryId: int64FromDatabase(row.categoryId),
    status: row.status,
  };
}

/** The Prisma client, or a transaction of it (an idempotent create runs in one). */
export type PetData = Pick<PrismaClient, 'pet'>;

export function createPetRepository(prisma: PetData): PetRepository {
  return {
    async list({ limit, status }) {
      // Ordered by id, the primary key: a stable order that the (status, id) index serves too.
      const rows = await prisma.pet.findMany({
        where: status ? { status } : undefined,
        orderBy: { id: 'asc' },
        take: limit,
      });
      return rows.map(toPet);
    },

    async create({ name, categoryId, status = DEFAULT_PET_STATUS }) {
      const row = await prisma.pet.create({ data: { name, categoryId: BigInt(categoryId), status } });
      return toPet(row);
    },

    async findById(id) {
      const row = await prisma.pet.findUnique({ where: { id } });
      return row ? toPet(row) : null;
    },
  };
}
