// JSON number texts of every shape, and what each denotes exactly (BigInt arithmetic on the text),
// for the integer rule's tests (src/domain/json-text.ts): test/json-text.test.ts and test/json-integers.test.ts.
import fc from 'fast-check';

const NUMBER_TEXT = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** The exact value of a JSON number text as `digits × 10^scale` (scale may be negative). */
function exactParts(text: string): { digits: bigint; scale: number } {
  const [, sign, whole, fraction = '', exponent = '0'] = NUMBER_TEXT.exec(text)!;
  return { digits: BigInt(`${sign}${whole}${fraction}`), scale: Number(exponent) - fraction.length };
}

/** Whether the text denotes a mathematical integer. */
export function exactlyAnInteger(text: string): boolean {
  const { digits, scale } = exactParts(text);
  return digits === 0n || scale >= 0 || digits % 10n ** BigInt(-scale) === 0n;
}

/** The integer a text denotes (call only when `exactlyAnInteger`). */
function exactInteger(text: string): bigint {
  const { digits, scale } = exactParts(text);
  return scale >= 0 ? digits * 10n ** BigInt(scale) : digits / 10n ** BigInt(-scale);
}

/** Long digit runs as often as short ones (fast-check favours small values otherwise). */
const MAX = { size: 'max' } as const;

/** Any JSON number text: signs, zeros, long fractions, exponents (up to 3 digits). */
export const anyNumberText = fc
  .tuple(
    fc.constantFrom('', '-'),
    fc.oneof(fc.constant('0'), fc.stringMatching(/^[1-9]\d{0,40}$/, MAX)),
    fc.option(fc.stringMatching(/^\d{1,40}$/, MAX), { nil: undefined }),
    fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.stringMatching(/^\d{1,3}$/, MAX)), { nil: undefined }),
  )
  .map(([sign, whole, fraction, exponent]) => `${sign}${whole}${fraction === undefined ? '' : `.${fraction}`}${exponent?.join('') ?? ''}`);

/**
 * Texts near an integer in `min … max`: the integer written otherwise (`7.0`, `7e0`, `70e-1`), and
 * numbers JavaScript rounds to it (`7.0000000000000001`, `6.99999999999999999999`).
 */
export function textsNear(min: number, max: number) {
  return fc.tuple(fc.integer({ min, max }), fc.integer({ min: 0, max: 6 }), fc.nat(4)).map(([n, zeros, form]) => {
    const padding = '0'.repeat(zeros);
    return [
      `${n}.${padding}0`,
      `${n}e0`,
      `${n}${padding}0e-${zeros + 1}`,
      `${n}.${'0'.repeat(15 + zeros)}1`,
      `${n - 1}.${'9'.repeat(20 + zeros)}`,
    ][form]!;
  });
}

/** What a text for an integer field with `min … max` must get: accepted as the exact value, or refused, and why. */
export type Verdict = { accepted: bigint } | { refused: 'must be an integer' | 'must be at least' | 'must be at most' };

export function verdict(text: string, min: number, max: number): Verdict {
  if (!exactlyAnInteger(text)) return { refused: 'must be an integer' };
  const value = exactInteger(text);
  if (value < BigInt(min)) return { refused: 'must be at least' };
  if (value > BigInt(max)) return { refused: 'must be at most' };
  return { accepted: value };
}
