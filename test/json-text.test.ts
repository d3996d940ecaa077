// The integer rule of request JSON (src/domain/json-text.ts): a number is an integer when its text
// is one, whatever double JavaScript reads from it. Checked against an exact oracle (BigInt
// arithmetic on the text) on generated number texts, and against JSON.parse on everything else.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { integerFromDigits, isIntegerText, NOT_AN_INTEGER, parseJson, withIntegerRule } from '../src/domain/json-text.js';
import { anyNumberText as numberText, exactlyAnInteger } from './support/number-texts.js';

describe('isIntegerText', () => {
  it.each([
    ['1', true],
    ['-0', true],
    ['0.000', true],
    ['1.0', true],
    ['1e2', true],
    ['100e-2', true],
    ['1.5e1', true],
    ['1E+400', true],
    ['1.5', false],
    ['0.99999999999999999999', false],
    ['1.0000000000000001', false],
    ['1e-400', false],
    ['10e-2', false],
    ['1e-99999999999999999999999', false],
    ['1e99999999999999999999999', true],
  ])('%s: %s', (text, integer) => {
    expect(isIntegerText(text)).toBe(integer);
  });

  it('agrees with exact arithmetic on any number text', () => {
    fc.assert(
      fc.property(numberText, (text) => isIntegerText(text) === exactlyAnInteger(text)),
      { numRuns: 5_000 },
    );
  });
});

describe('parseJson', () => {
  it('reads every number by its text: integers as their value, others never as an integer', () => {
    fc.assert(
      fc.property(numberText, (text) => {
        const value = (parseJson(`{"n":${text}}`) as { n: number }).n;
        if (!exactlyAnInteger(text)) return !Number.isInteger(value);
        const double = Number(text);
        return Object.is(value, Number.isFinite(double) ? double : Math.sign(double) * Number.MAX_VALUE);
      }),
      { numRuns: 5_000 },
    );
  });

  it.each([
    ['0.99999999999999999999', NOT_AN_INTEGER],
    ['1.0000000000000001', NOT_AN_INTEGER],
    ['-1e-400', NOT_AN_INTEGER],
    ['1.5', 1.5],
    ['1e400', Number.MAX_VALUE],
    ['-1e400', -Number.MAX_VALUE],
    ['9'.repeat(400), Number.MAX_VALUE],
    ['1.0', 1],
    ['123456789012345678901', Number('123456789012345678901')],
  ])('%s reads as %s', (text, value) => {
    expect(parseJson(`[${text}]`)).toEqual([value]);
  });

  it('reads any other JSON as JSON.parse does, `__proto__` as an own key', () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 4, depthSize: 'max' }), (text) => {
        expect(parseJson(text)).toStrictEqual(JSON.parse(text));
      }),
      { numRuns: 2_000 },
    );
    const parsed = parseJson('{"__proto__":{"polluted":1.5},"a":1.0}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.keys(parsed)).toEqual(['__proto__', 'a']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('throws JSON.parse’s own error for text that is not JSON', () => {
    for (const text of ['{', '', '1.', '{"a":1.0', '\uFEFF{}']) {
      expect(() => parseJson(text)).toThrow(SyntaxError);
      let message = '';
      try {
        JSON.parse(text);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(() => parseJson(text)).toThrow(message);
    }
  });
});

describe('withIntegerRule (text for a parser that is not ours)', () => {
  it('is the text itself unless the rule changes a number, and JSON.parse of it reads what parseJson reads', () => {
    const document = fc
      .tuple(fc.json({ maxDepth: 3, depthSize: 'max' }), fc.array(numberText, { maxLength: 4, size: 'max' }))
      .map(([json, numbers]) => `{"json":${json},"numbers":[${numbers.join(',')}]}`);
    fc.assert(
      fc.property(document, (text) => {
        const ruled = withIntegerRule(text);
        // The same value, as JSON carries it (JSON has no -0: JSON.stringify writes it as 0).
        expect(JSON.stringify(JSON.parse(ruled))).toBe(JSON.stringify(parseJson(text)));
        if (JSON.stringify(parseJson(text)) === JSON.stringify(JSON.parse(text))) expect(ruled).toBe(text);
      }),
      { numRuns: 2_000 },
    );
  });

  it('rewrites only the numbers it reads otherwise, whatever the nesting', () => {
    expect(withIntegerRule('{ "a" : -0 , "b" : [1.0, 1e400, 0.99999999999999999999, "9.99999999999999999999"] }')).toBe(
      '{ "a" : -0 , "b" : [1.0, 1.7976931348623157e+308, 0.5, "9.99999999999999999999"] }',
    );
    const deep = `${'['.repeat(100_000)}1.0000000000000001${']'.repeat(100_000)}`;
    expect(withIntegerRule(deep)).toBe(`${'['.repeat(100_000)}${NOT_AN_INTEGER}${']'.repeat(100_000)}`);
    let value = parseJson(deep);
    for (let depth = 0; depth < 100_000; depth++) value = (value as unknown[])[0];
    expect(value).toBe(NOT_AN_INTEGER);
  });

  it('keeps leading byte order marks and leaves what is not JSON alone', () => {
    expect(withIntegerRule('\uFEFF\uFEFF{"a":1.0000000000000001}')).toBe(`\uFEFF\uFEFF{"a":${NOT_AN_INTEGER}}`);
    expect(withIntegerRule('{"a":1.0000000000000001')).toBe('{"a":1.0000000000000001');
    expect(withIntegerRule('{"a":1.0}')).toBe('{"a":1.0}');
  });
});

describe('integerFromDigits (query strings and paths)', () => {
  it('is the number, or ±Number.MAX_VALUE past a double’s range', () => {
    expect(integerFromDigits('42')).toBe(42);
    expect(integerFromDigits('123456789012345678901')).toBe(1.2345678901234568e20);
    expect(integerFromDigits('9'.repeat(400))).toBe(Number.MAX_VALUE);
    expect(integerFromDigits(`-${'9'.repeat(400)}`)).toBe(-Number.MAX_VALUE);
  });
});
