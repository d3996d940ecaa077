// The peers' inputs, shared by every peer so that each validates alike: the list query and the
// path id as a team would write them with zod (query strings coerced), and validation issues
// (Standard Schema's, as zod, NestJS's pipe and oRPC hand them over) as one sentence, as the
// service's envelope words them. The body is the service's own NewPet schema.
import { z } from 'zod';
import { PetStatus } from '../../src/domain/pet-schemas.js';

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  status: PetStatus.optional(),
});
export type ListQuery = z.infer<typeof ListQuery>;

export const PetId = z
  .string()
  .regex(/^\d{1,16}$/, 'must be a positive integer')
  .transform(Number);

/** Validation issues (Standard Schema's, as zod, Nest's pipe and oRPC give them) as one sentence: `name: must not be empty; …`. */
export function issuesSentence(
  issues: ReadonlyArray<{ message: string; path?: ReadonlyArray<PropertyKey | { key: PropertyKey }> }>,
): string {
  return issues
    .map((issue) => {
      const path = (issue.path ?? []).map((segment) => String(typeof segment === 'object' ? segment.key : segment)).join('.');
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join('; ');
}
