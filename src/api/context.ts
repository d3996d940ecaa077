// What every procedure receives: who is calling, and the data access it may use.
import type { ApiKeyIdentity } from '../auth/api-keys.js';
import type { PetRepository } from '../pets/pet-repository.js';

export interface Context {
  /** The verified API key behind the request, or null when it had none or a bad one. */
  identity: ApiKeyIdentity | null;
  pets: PetRepository;
}
