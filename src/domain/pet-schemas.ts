// The pet records of the contract (spec section 2) as zod schemas. They validate procedure input
// and output on both surfaces and are the source of the OpenAPI document's components.
import { z } from 'zod';
import { int64Id } from './int64.js';
import { expected, integerMessages } from './validation-messages.js';

const PET_STATUSES = ['available', 'pending', 'sold'] as const;

/** A new pet is `available` unless the request says otherwise (the spec leaves the default open). */
export const DEFAULT_PET_STATUS = 'available' satisfies PetStatus;

/** The page size of `listPets` when `limit` is omitted, and its bounds (spec section 8). */
const LIST_LIMIT = { default: 20, min: 1, max: 100 } as const;

/** Names are 1 to 100 characters (the spec sets no limit; docs/decisions.md, "Length limit on `name`"). */
const NAME_MAX_LENGTH = 100;

export const PetStatus = z
  .enum(PET_STATUSES, { error: `must be one of ${PET_STATUSES.join(', ')}` })
  .meta({ id: 'PetStatus', description: 'Availability status.' });
export type PetStatus = z.infer<typeof PetStatus>;

/**
 * The name rule as one regular expression (Unicode mode), so that the OpenAPI document carries one
 * `pattern` that code generators read as a plain string: no control character (NUL above all: some
 * databases refuse it) and no unpaired surrogate (JSON "\ud800" cannot be stored as UTF-8: it would
 * come back as U+FFFD) anywhere (the lookahead), and at least one character that is neither white
 * space nor an invisible format character (U+200B zero width space…). Linear time: the two classes
 * after the lookahead never overlap.
 */
const NAME_PATTERN = /^(?=[^\p{Cc}\p{Cs}]*$)[\s\p{Cf}]*[^\s\p{Cf}]/u;

/**
 * The name rule as the OpenAPI document states it, for validators outside JavaScript: the portable
 * subset of regular expressions (no lookaround, no `\p{…}`, no `\u` escapes), which Python's `re`,
 * ECMA-262 with or without the `u` flag, and RE2 (Go, Rust) all read alike. No control character
 * anywhere (C0, DEL and C1: exactly Unicode's Cc, the set the service refuses), in every engine: each
 * class leaves out \x00-\x1F and \x7F-\x9F itself, whatever the engine's `\s` holds (Python's also
 * holds U+001C–U+001F and U+0085; RE2's is ASCII only). Then something other than white space
 * after any leading white space. Looser than NAME_PATTERN where engines' white space differs, and
 * for names of invisible format characters only or with an unpaired surrogate (the description says
 * so), never stricter (test/openapi-patterns.test.ts). Python's `$` also matches before a final
 * newline, so `re.search` takes `"Rex\n"`: the description tells Python readers to use fullmatch.
 */
const NAME_DOCUMENT_PATTERN = String.raw`^[^\S\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$`;

/** Which part of the name rule `input` breaks, in the words the error envelope uses. */
function nameProblem(input: unknown): string {
  if (typeof input === 'string' && /\p{Cc}/u.test(input)) return 'must not contain control characters';
  if (typeof input === 'string' && /\p{Cs}/u.test(input)) return 'must be valid Unicode text (no unpaired surrogates)';
  return 'must not be blank';
}

const PetName = z
  .string({ error: expected('a string') })
  .min(1, 'must not be empty')
  .max(NAME_MAX_LENGTH, `must be at most ${NAME_MAX_LENGTH} characters`)
  .regex(NAME_PATTERN, { error: (issue) => nameProblem(issue.input) })
  .meta({
    description:
      "The animal's name: not blank (white space and invisible format characters such as U+200B do not count), " +
      'no control characters (U+0000–U+001F, U+007F–U+009F), valid Unicode text (no unpaired surrogates). ' +
      'The pattern is meant for the whole value: in Python use `re.fullmatch` (with `re.search`, `$` also matches ' +
      'before a final newline, which the service refuses).',
    pattern: NAME_DOCUMENT_PATTERN,
    example: 'Rex',
  });

const petFields = {
  name: PetName,
  categoryId: int64Id().meta({ description: 'Identifier of the category the animal belongs to.', example: 1 }),
};

/** The body of `createPet`. Unknown fields (a client-chosen `id`, a misspelt key) are refused. */
export const NewPet = z
  .strictObject({
    ...petFields,
    status: PetStatus.optional().meta({ description: `Availability status; \`${DEFAULT_PET_STATUS}\` when omitted.` }),
  })
  .meta({ id: 'NewPet' });
export type NewPet = z.infer<typeof NewPet>;

export const Pet = z
  .object({
    id: int64Id().meta({ description: 'Unique identifier, assigned by the service on creation.', example: 1 }),
    ...petFields,
    status: PetStatus,
  })
  .meta({ id: 'Pet' });
export type Pet = z.infer<typeof Pet>;

export const Pets = z.array(Pet).meta({ id: 'Pets' });

export const ListPetsInput = z
  .object({
    limit: z
      .int({ error: integerMessages(LIST_LIMIT) })
      .min(LIST_LIMIT.min, { error: integerMessages(LIST_LIMIT) })
      .max(LIST_LIMIT.max, { error: integerMessages(LIST_LIMIT) })
      .default(LIST_LIMIT.default)
      .meta({ description: 'Maximum number of animals to return.' }),
    status: PetStatus.optional().meta({ description: 'Returns only animals with this status.' }),
    // Keyset pagination: the next page starts after the last id of this one (docs/api.md).
    after: int64Id()
      // No example: Swagger UI's "Try it out" would send it, and list from there instead of the start.
      .meta({ description: 'Returns only animals with an `id` greater than this one: the last `id` of the previous page.' })
      .optional(),
  })
  // `pets.list()` with no argument at all lists with the defaults.
  .prefault({});
export type ListPetsInput = z.infer<typeof ListPetsInput>;

export const GetPetInput = z.object({
  petId: int64Id().meta({ description: 'The identifier of the animal.' }),
});

const PET_KEYS = ['id', 'name', 'categoryId', 'status'] as const;
const PET_STATUS_SET: ReadonlySet<unknown> = new Set(PET_STATUSES);
const isId = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 1;

/**
 * `Pet`'s rules as one precompiled check, for output validation: true only when zod's `Pet.parse`
 * would accept `value` and return an object that serialises to the same JSON (these keys, in this
 * order, nothing else enumerable). zod's parse of a page of 20 costs ~13 µs and copies every pet;
 * this check ~1 µs. False says nothing: the caller then runs zod itself (test/output-checks.test.ts).
 */
function isExactPet(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const pet = value as Record<string, unknown>;
  let count = 0;
  for (const key in pet) if (key !== PET_KEYS[count++]) return false;
  if (count !== PET_KEYS.length) return false;
  const name = pet.name;
  return (
    isId(pet.id) &&
    typeof name === 'string' &&
    name.length >= 1 &&
    name.length <= NAME_MAX_LENGTH &&
    NAME_PATTERN.test(name) &&
    isId(pet.categoryId) &&
    PET_STATUS_SET.has(pet.status)
  );
}

/** `Pets`'s rules as a precompiled check (see isExactPet). */
function areExactPets(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (!isExactPet(value[i])) return false;
  return true;
}

/**
 * Output schemas with a precompiled check: the output validator (src/api/trpc-internals.ts) passes
 * a value the check accepts as it is, and gives any other to the schema.
 */
export const PRECOMPILED_OUTPUT_CHECKS: ReadonlyMap<z.ZodType, (value: unknown) => boolean> = new Map<
  z.ZodType,
  (value: unknown) => boolean
>([
  [Pet, isExactPet],
  [Pets, areExactPets],
]);
