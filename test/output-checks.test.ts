// The precompiled output checks (src/domain/pet-schemas.ts, PRECOMPILED_OUTPUT_CHECKS): a value a
// check accepts is passed on without zod, so the check must never accept what the schema refuses,
// nor a value whose JSON differs from the schema's output. A refusal costs only speed (zod decides).
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { Pet, Pets, PRECOMPILED_OUTPUT_CHECKS } from '../src/domain/pet-schemas.js';

const valid = { id: 1, name: 'Rex', categoryId: 7, status: 'available' };

/** Values around every rule of Pet: each field's bounds and types, extra, missing and reordered keys. */
const candidates: unknown[] = [
  valid,
  { ...valid, id: Number.MAX_SAFE_INTEGER, categoryId: Number.MAX_SAFE_INTEGER, status: 'sold' },
  { ...valid, status: 'pending', name: 'x'.repeat(100) },
  { ...valid, name: ' \u200bRex' },
  { ...valid, name: 'Ünïcödé 🐈' },
  { ...valid, name: 'x'.repeat(101) },
  { ...valid, name: '' },
  { ...valid, name: '   ' },
  { ...valid, name: '\u200b' },
  { ...valid, name: 'Re\u0000x' },
  { ...valid, name: 'Re\u0085x' },
  { ...valid, name: 'Re\ud800x' },
  { ...valid, name: 7 },
  { ...valid, id: 0 },
  { ...valid, id: -1 },
  { ...valid, id: 1.5 },
  { ...valid, id: -0 },
  { ...valid, id: Number.MAX_SAFE_INTEGER + 1 },
  { ...valid, id: NaN },
  { ...valid, id: '1' },
  { ...valid, id: 1n },
  { ...valid, categoryId: 0 },
  { ...valid, categoryId: null },
  { ...valid, status: 'lost' },
  { ...valid, status: undefined },
  { ...valid, extra: 1 },
  { id: 1, categoryId: 7, name: 'Rex', status: 'available' },
  { name: 'Rex', categoryId: 7, status: 'available' },
  { id: 1, name: 'Rex', categoryId: 7 },
  Object.assign(Object.create({ inherited: true }) as object, valid),
  Object.defineProperty({ ...valid }, 'hidden', { value: 1, enumerable: false }),
  null,
  'Rex',
  [valid],
];

/** What the validator would send: the value itself when the check accepts it, else zod's output. */
function agrees(schema: typeof Pet | typeof Pets, value: unknown): void {
  const check = PRECOMPILED_OUTPUT_CHECKS.get(schema)!;
  const parsed = schema.safeParse(value);
  if (check(value)) {
    expect(parsed.success, inspect(value)).toBe(true);
    expect(JSON.stringify(value)).toBe(JSON.stringify(parsed.data));
  }
}

describe('precompiled output checks', () => {
  it('has one for Pet and one for Pets', () => {
    expect(PRECOMPILED_OUTPUT_CHECKS.get(Pet)).toBeTypeOf('function');
    expect(PRECOMPILED_OUTPUT_CHECKS.get(Pets)).toBeTypeOf('function');
  });

  it("accepts only what Pet accepts, and only where its output's JSON is the value's", () => {
    for (const value of candidates) agrees(Pet, value);
  });

  it('accepts only what Pets accepts, item by item', () => {
    for (const value of candidates) agrees(Pets, [valid, value]);
    agrees(Pets, []);
    const holey: unknown[] = [valid];
    holey[2] = valid; // a hole at 1
    agrees(Pets, holey);
    agrees(Pets, valid);
  });

  it("accepts the repository's pets (in its key order), so that the fast path is taken", () => {
    const check = PRECOMPILED_OUTPUT_CHECKS.get(Pets)!;
    const page = Array.from({ length: 20 }, (_, i) => ({ id: i + 1, name: `pet ${i}`, categoryId: 3, status: 'sold' }));
    expect(check(page)).toBe(true);
    expect(PRECOMPILED_OUTPUT_CHECKS.get(Pet)!(valid)).toBe(true);
  });

  it('refuses every value Pet refuses (zod then decides, and answers 500)', () => {
    const check = PRECOMPILED_OUTPUT_CHECKS.get(Pet)!;
    for (const value of candidates) if (!Pet.safeParse(value).success) expect(check(value), inspect(value)).toBe(false);
  });
});
