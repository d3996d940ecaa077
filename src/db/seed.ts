// Sample pets for development (`npm run db:seed`); adds only what is missing, through Prisma.
import type { PetStatus } from '../domain/pet-schemas.js';
import type { PrismaClient } from './database.js';

/** The samples' own names: the contract knows categories only by id. */
const SAMPLE_CATEGORIES = { dogs: 1, cats: 2, birds: 3, fish: 4, reptiles: 5 } as const;

const { dogs, cats, birds, fish, reptiles } = SAMPLE_CATEGORIES;

export const SAMPLE_PETS: ReadonlyArray<{ name: string; categoryId: number; status: PetStatus }> = [
  { name: 'Rex', categoryId: dogs, status: 'available' },
  { name: 'Bella', categoryId: dogs, status: 'pending' },
  { name: 'Max', categoryId: dogs, status: 'sold' },
  { name: 'Luna', categoryId: dogs, status: 'available' },
  { name: 'Milo', categoryId: cats, status: 'available' },
  { name: 'Cleo', categoryId: cats, status: 'available' },
  { name: 'Oliver', categoryId: cats, status: 'sold' },
  { name: 'Nala', categoryId: cats, status: 'pending' },
  { name: 'Kiwi', categoryId: birds, status: 'available' },
  { name: 'Sunny', categoryId: birds, status: 'sold' },
  { name: 'Bubbles', categoryId: fish, status: 'available' },
  { name: 'Nemo', categoryId: fish, status: 'available' },
  { name: 'Goldie', categoryId: fish, status: 'pending' },
  { name: 'Spike', categoryId: reptiles, status: 'available' },
  { name: 'Shelly', categoryId: reptiles, status: 'sold' },
];

export async function seedDatabase(prisma: PrismaClient): Promise<number> {
  let added = 0;
  for (const pet of SAMPLE_PETS) {
    const data = { name: pet.name, categoryId: BigInt(pet.categoryId), status: pet.status };
    const existing = await prisma.pet.findFirst({ where: { name: data.name, categoryId: data.categoryId } });
    if (existing) continue;
    await prisma.pet.create({ data });
    added += 1;
  }
  return added;
}
