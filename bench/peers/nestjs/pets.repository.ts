// The peer's repository: the peers' shared statements (bench/peers/sqlite-pets.ts) as a Nest provider.
import { Inject, Injectable } from '@nestjs/common';
import type Database from 'better-sqlite3';
import type { NewPet, Pet, PetStatus } from '../../../src/domain/pet-schemas.js';
import { petsStore, type PetsStore } from '../sqlite-pets.js';

export const DATABASE = Symbol('DATABASE');

@Injectable()
export class PetsRepository implements PetsStore {
  private readonly store: PetsStore;

  constructor(@Inject(DATABASE) db: Database.Database) {
    this.store = petsStore(db);
  }

  list(limit: number, status?: PetStatus): Pet[] {
    return this.store.list(limit, status);
  }

  find(id: number): Pet | undefined {
    return this.store.find(id);
  }

  create(pet: NewPet): Pet {
    return this.store.create(pet);
  }

  findActiveByHash(hash: string): Promise<{ id: number } | null> {
    return this.store.findActiveByHash(hash);
  }
}
