// The contract's pet records (spec section 2) as zod schemas: input and output on both surfaces, and
// the OpenAPI document's components. With them the int64 id rule: ids are JSON numbers, so only up to
// 2^53 − 1; a larger one is refused (400), never rounded, though the columns are 64-bit
// (docs/decisions.md), and a database's int64 is read back into that range.
import { z } from 'zod';
import { expected, integerMessages } from './validation-messages.js';

const PET_STATUSES = ['available', 'pending', 'sold'] as const;

/** A new pet is `available` unless the request says otherwise (the spec leaves the default open). */
export const DEFAULT_PET_STATUS = 'available' satisfies PetStatus;

/** Spec section 8. */
const LIST_LIMIT = { default: 20, min: 1, max: 100 } as const;

/** The spec sets no limit: docs/decisions.md, "Length limit on `name`". */
const NAME_MAX_LENGTH = 100;

const int64Messages = integerMessages({ min: 1, max: Number.MAX_SAFE_INTEGER, maxLabel: `${Number.MAX_SAFE_INTEGER} (2^53 − 1)` });

const int64Id = () =>
  z
    .int({ error: int64Messages })
    .min(1, { error: int64Messages })
    .max(Number.MAX_SAFE_INTEGER, { error: int64Messages })
    .meta({ format: 'int64' });

/** A bigint or number (SQLite) or decimal text (PostgreSQL) as the API's number. */
export function int64FromDatabase(value: bigint | number | string): number {
  const number = Number(value);
  if (!Number.isSafeInteger(number)) throw new RangeError(`int64 value ${value} is outside the API's range`);
  return number;
}

export const PetStatus = z
  .enum(PET_STATUSES, { error: `must be one of ${PET_STATUSES.join(', ')}` })
  .meta({ id: 'PetStatus', description: 'Availability status.' });
export type PetStatus = z.infer<typeof PetStatus>;

/** Inclusive ranges of code points. */
type Ranges = ReadonlyArray<readonly [number, number]>;

/** Scalar values but controls (NUL: some databases refuse it); a lone surrogate cannot be stored as UTF-8. */
const TEXT: Ranges = [
  [0x20, 0x7e],
  [0xa0, 0xd7ff],
  [0xe000, 0x10ffff],
];

/** Not a name alone: Unicode 17's White_Space and Cf, written out as `\s` and `\p{Cf}` differ between engines. */
const BLANK: Ranges = [
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0xad, 0xad],
  [0x600, 0x605],
  [0x61c, 0x61c],
  [0x6dd, 0x6dd],
  [0x70f, 0x70f],
  [0x890, 0x891],
  [0x8e2, 0x8e2],
  [0x1680, 0x1680],
  [0x180e, 0x180e],
  [0x2000, 0x200f],
  [0x2028, 0x202f],
  [0x205f, 0x2064],
  [0x2066, 0x206f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
  [0xfff9, 0xfffb],
  [0x110bd, 0x110bd],
  [0x110cd, 0x110cd],
  [0x13430, 0x1343f],
  [0x1bca0, 0x1bca3],
  [0x1d173, 0x1d17a],
  [0xe0001, 0xe0001],
  [0xe0020, 0xe007f],
];

/** `ranges` without the code points of `removed` (both sorted). */
function without(ranges: Ranges, removed: Ranges): Ranges {
  const kept: Array<[number, number]> = [];
  for (const [from, to] of ranges) {
    let next = from;
    for (const [cutFrom, cutTo] of removed) {
      if (cutTo < next || cutFrom > to) continue;
      if (cutFrom > next) kept.push([next, cutFrom - 1]);
      next = cutTo + 1;
    }
    if (next <= to) kept.push([next, to]);
  }
  return kept;
}

/** A character class that Python's `re`, RE2 and ECMA-262 in Unicode mode all read alike (they share no escape above U+00FF). */
function characterClass(ranges: Ranges): string {
  const character = (code: number) =>
    code <= 0xff ? `\\x${code.toString(16).toUpperCase().padStart(2, '0')}` : String.fromCodePoint(code);
  return `[${ranges.map(([from, to]) => (from === to ? character(from) : `${character(from)}-${character(to)}`)).join('')}]`;
}

/** The whole name rule, also the document's `pattern`; linear time: the first two classes never overlap. */
const NAME_PATTERN_SOURCE = `^${characterClass(BLANK)}*${characterClass(without(TEXT, BLANK))}${characterClass(TEXT)}*$`;
const NAME_PATTERN = new RegExp(NAME_PATTERN_SOURCE, 'u');

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
      "The animal's name: not blank (white space and invisible format characters such as U+200B, U+FEFF or U+00AD " +
      'do not count), no control characters (U+0000–U+001F, U+007F–U+009F), valid Unicode text (no unpaired ' +
      'surrogates). The pattern is the whole rule, read alike by ECMA-262 in Unicode mode, Python `re` and RE2; it ' +
      'is meant for the whole value: in Python use `re.fullmatch` (with `re.search`, `$` also matches before a ' +
      'final newline, which the service refuses).',
    pattern: NAME_PATTERN_SOURCE,
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
    after: int64Id()
      // No example: Swagger UI's "Try it out" would send it.
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
 * True only when `Pet.parse` would return the same JSON; false says nothing (zod runs).
 * Why: docs/benchmarks.md, "`Pet`/`Pets` output by a precompiled check first".
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

function areExactPets(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (!isExactPet(value[i])) return false;
  return true;
}

/** Output schemas with a precompiled check, used first by src/api/trpc-internals.ts. */
export const PRECOMPILED_OUTPUT_CHECKS: ReadonlyMap<z.ZodType, (value: unknown) => boolean> = new Map<
  z.ZodType,
  (value: unknown) => boolean
>([
  [Pet, isExactPet],
  [Pets, areExactPets],
]);
