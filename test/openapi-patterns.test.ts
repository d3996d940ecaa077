// Every `pattern` of the served OpenAPI document, read by validators outside the service: ECMA-262
// in Unicode mode (JSON Schema's reading: ajv, browsers), Python's `re` (python3, as jsonschema and
// Python API test tools use it) and RE2 (Go, Rust; here re2js, a port of RE2 to JavaScript). Each
// must compile every pattern, and `name`'s pattern is the whole name rule: each engine decides as
// the service does, character class by character class (white space, invisible format characters,
// controls, unpaired surrogates, astral text) and on generated names; Python's `re.search` differs
// only by letting one final newline through (docs/decisions.md, "The OpenAPI document").
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NewPet } from '../src/domain/pet-schemas.js';
import { startTestServer, type TestServer } from './support/test-server.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document is walked by path
type Doc = any;

let server: TestServer;
let doc: Doc;
beforeAll(async () => {
  server = await startTestServer();
  doc = await (await fetch(`${server.baseUrl}/v1/openapi.json`)).json();
});
afterAll(() => server.close());

/** Every `pattern` in the document, with where it is. */
function patternsOf(node: unknown, where = '#'): Array<{ where: string; pattern: string }> {
  if (typeof node !== 'object' || node === null) return [];
  return Object.entries(node).flatMap(([key, value]) =>
    key === 'pattern' && typeof value === 'string' ? [{ where, pattern: value }] : patternsOf(value, `${where}/${key}`),
  );
}

/** Python's reading: compile errors, and per pattern and text `re.search` (matches) and `re.fullmatch` (whole). */
interface PythonReading {
  errors: Array<string | null>;
  matches: boolean[][];
  whole: boolean[][];
}

/**
 * Python's `re`, from one python3 run: for each pattern, its compile error (or null), and for each
 * text whether `re.search` finds the pattern in it (JSON Schema's meaning of `pattern`). Texts go
 * through JSON, so unpaired surrogates and astral characters arrive as Python reads them from JSON.
 */
function python(patterns: string[], texts: string[]): PythonReading {
  const program = `
import json, re, sys
job = json.loads(sys.stdin.buffer.read().decode('utf-8'))
errors, compiled = [], []
for pattern in job['patterns']:
    try:
        compiled.append(re.compile(pattern)); errors.append(None)
    except re.error as error:
        compiled.append(None); errors.append(str(error))
matches = [[bool(c.search(text)) if c else False for text in job['texts']] for c in compiled]
whole = [[bool(c.fullmatch(text)) if c else False for text in job['texts']] for c in compiled]
sys.stdout.write(json.dumps({'errors': errors, 'matches': matches, 'whole': whole}))
`;
  let output: Buffer;
  try {
    output = execFileSync('python3', ['-c', program], { input: JSON.stringify({ patterns, texts }), maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    // Never a skip: without python3 this check cannot be made, and says so.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new Error('python3 is needed to read the patterns as Python does: install it (Debian: apt-get install python3)');
    throw error;
  }
  return JSON.parse(output.toString('utf8')) as PythonReading;
}

/** The readings of a pattern besides Python's (which is batched), as functions. */
const engines = {
  'ECMA-262 (u)': (pattern: string) => {
    const regex = new RegExp(pattern, 'u');
    return (text: string) => regex.test(text);
  },
  RE2: (pattern: string) => {
    const regex = RE2JS.compile(pattern);
    return (text: string) => regex.test(text);
  },
};

/** Names people give: scripts, accents, emoji (astral, with joiners), spaces inside and around. */
const STORED_NAMES = [
  'Rex',
  'a',
  'Pup 1',
  'cat',
  '  spaced  out ',
  'O\'Brien "quoted" <b>',
  'Ünïcødé',
  'e\u0301\u0301',
  '名前',
  '小狗 二号',
  'Щенок',
  'שלום',
  'مرحبا',
  'कुत्ता',
  '🐈',
  '🐈‍⬛',
  '👩‍👩‍👧‍👦 family',
  '🏳️‍🌈',
  'a\u200Db',
  '\u200BRex',
  'Rex\u200B',
  '\u00A0Rex\u00A0',
  '\u3000Rex',
  '\uFEFFRex',
  'x'.repeat(100),
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  'tab-less\u2028separated',
];

/** Names the service refuses; the document may let some through (it is looser), but not these, in any engine. */
const REFUSED_BY_ALL = [
  '',
  ' ',
  '   ',
  '\t',
  'a\u0000b',
  'line\nbreak',
  'tab\there',
  'a\u0085',
  'bell\u0007',
  // White space that is also a control character, leading: JavaScript's, Python's or RE2's `\s` holds each.
  '\tRex',
  '\nRex',
  '\u000bRex',
  '\u000cRex',
  '\rRex',
  ' \tRex',
  '\u001cRex',
  '\u001fRex',
  '\u0085Rex',
  // Only white space and invisible format characters, and unpaired surrogates (issue 39).
  '\u200b',
  '\ufeff',
  '\u180e',
  '\u2060',
  '\u00ad',
  '\u200d',
  '\u061c',
  '\u{e0020}',
  ' \u200b',
  '\u00a0\u3000\u2028',
  '\ud800',
  '\udc00',
  'Rex\udc00',
  '\udc00\ud800',
];

/** Every control character (Unicode's Cc: the set the service refuses), alone and at each place in a name. */
const CONTROLS = [...Array.from({ length: 0x20 }, (_, code) => code), ...Array.from({ length: 0x21 }, (_, index) => 0x7f + index)].map(
  (code) => String.fromCharCode(code),
);
const WITH_A_CONTROL = CONTROLS.flatMap((control) => [
  control,
  `${control}Rex`,
  ` ${control}Rex`,
  `R${control}x`,
  `Rex${control}`,
  `Rex ${control}`,
]);

const accepted = (name: string) => NewPet.shape.name.safeParse(name).success;

describe('the document’s patterns outside the service', () => {
  it('names a pattern for `name`, and every pattern compiles in Python’s re, ECMA-262 in Unicode mode and RE2', () => {
    const patterns = patternsOf(doc);
    // name (Pet and the create body), the Idempotency-Key header, the traceparent header.
    expect(patterns.length).toBeGreaterThanOrEqual(4);
    expect(patterns.map(({ where }) => where)).toContain('#/components/schemas/Pet/properties/name');
    const { errors } = python(
      patterns.map(({ pattern }) => pattern),
      [],
    );
    patterns.forEach(({ where, pattern }, index) => {
      expect(errors[index], `Python re: ${where} ${pattern}`).toBeNull();
      for (const [engine, compile] of Object.entries(engines))
        expect(() => compile(pattern), `${engine}: ${where} ${pattern}`).not.toThrow();
    });
  });

  it('every stored name matches `name`’s pattern in each engine; control characters and blanks match in none', async () => {
    for (const name of STORED_NAMES) {
      const response = await server.post('/v1/pets', { name, categoryId: 1 });
      expect(response.status, JSON.stringify(name)).toBe(201);
      expect(((await response.json()) as { name: string }).name).toBe(name);
    }
    // Names as the service's own schema accepts them, of every kind of character (astral, lone surrogates, controls).
    const generated = fc
      .sample(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 100, size: 'max' }),
          fc.string({ unit: 'grapheme', maxLength: 30, size: 'max' }),
          fc.string({ unit: fc.constantFrom(' ', '\u200B', '\u00A0', '\u3000', '\u2028', '\uFEFF', 'a', '🐈', '\u0301'), maxLength: 20 }),
        ),
        { numRuns: 3_000, seed: 25 },
      )
      .filter(accepted);
    expect(generated.length).toBeGreaterThan(1_000);
    const names = [...STORED_NAMES, ...generated];

    const pattern = doc.components.schemas.Pet.properties.name.pattern as string;
    const { errors, matches } = python([pattern], [...names, ...REFUSED_BY_ALL]);
    expect(errors).toEqual([null]);
    names.forEach((name, index) => expect(matches[0]![index], `Python re: ${JSON.stringify(name)}`).toBe(true));
    REFUSED_BY_ALL.forEach((name, index) => expect(matches[0]![names.length + index], `Python re: ${JSON.stringify(name)}`).toBe(false));
    for (const [engine, compile] of Object.entries(engines)) {
      const matchesName = compile(pattern);
      for (const name of names) expect(matchesName(name), `${engine}: ${JSON.stringify(name)}`).toBe(true);
      for (const name of REFUSED_BY_ALL) expect(matchesName(name), `${engine}: ${JSON.stringify(name)}`).toBe(false);
      for (const name of REFUSED_BY_ALL) expect(accepted(name), JSON.stringify(name)).toBe(false);
    }
  });

  it('refuses exactly the control characters the service refuses, in each engine (Python: with fullmatch, as the description says)', () => {
    const schema = doc.components.schemas.Pet.properties.name as { pattern: string; description: string };
    for (const name of WITH_A_CONTROL) expect(accepted(name), JSON.stringify(name)).toBe(false);
    const { whole, matches } = python([schema.pattern], WITH_A_CONTROL);
    WITH_A_CONTROL.forEach((name, index) => expect(whole[0]![index], `Python fullmatch: ${JSON.stringify(name)}`).toBe(false));
    // re.search with `$`: only a name of allowed text and one final newline gets through, as the description warns.
    expect(WITH_A_CONTROL.filter((_name, index) => matches[0]![index])).toEqual(['Rex\n', 'Rex \n']);
    expect(schema.description).toMatch(/re\.fullmatch/);
    for (const reading of [new RegExp(schema.pattern, 'u'), RE2JS.compile(schema.pattern)]) {
      for (const name of WITH_A_CONTROL) expect(reading.test(name), `${String(reading)}: ${JSON.stringify(name)}`).toBe(false);
    }
  });

  it('each character alone: the service, ECMA-262 (u), Python’s re and RE2 decide alike, and blank is the running Node’s [\\s\\p{Cf}]', () => {
    const pattern = doc.components.schemas.Pet.properties.name.pattern as string;
    /** The code points whose one-character name `decides` accepts, as ranges. */
    const acceptedRanges = (decides: (name: string) => boolean): string[] => {
      const ranges: string[] = [];
      let from = -1;
      for (let code = 0; code <= 0x110000; code++) {
        const yes = code < 0x110000 && decides(String.fromCodePoint(code));
        if (yes && from < 0) from = code;
        if (!yes && from >= 0) {
          ranges.push(`${from.toString(16)}-${(code - 1).toString(16)}`);
          from = -1;
        }
      }
      return ranges;
    };
    const service = acceptedRanges(accepted);
    const control = /\p{Cc}/u;
    const blank = /[\s\p{Cf}]/u;
    expect(service).toEqual(acceptedRanges((name) => !control.test(name) && !blank.test(name) && !/\p{Cs}/u.test(name)));
    for (const [engine, compile] of Object.entries(engines)) expect(acceptedRanges(compile(pattern)), engine).toEqual(service);
    const program = `
import json, re, sys
pattern = re.compile(json.loads(sys.stdin.read()))
ranges, start = [], -1
for code in range(0x110001):
    yes = code < 0x110000 and pattern.fullmatch(chr(code)) is not None
    if yes and start < 0: start = code
    if not yes and start >= 0: ranges.append('%x-%x' % (start, code - 1)); start = -1
sys.stdout.write(json.dumps(ranges))
`;
    const fromPython = JSON.parse(
      execFileSync('python3', ['-c', program], { input: JSON.stringify(pattern) }).toString('utf8'),
    ) as string[];
    expect(fromPython).toEqual(service);
  });

  it('the service’s own answers, on both surfaces, are each engine’s: the issue’s names and each class at its edges', async () => {
    const pattern = doc.components.schemas.Pet.properties.name.pattern as string;
    const names = [
      ...REFUSED_BY_ALL.slice(-15),
      ...['Rex', 'a\u200db', '\u200bRex', '\ufeffRex', '\u{e0020}a', '\u{10ffff}', '\ufffd', '\ufffe', '\u{1f408}', '\ud7ff', '\ue000'],
      ...[
        '\u{110bd}',
        '\u{13430}',
        '\u{1343f}',
        '\u{1d173}',
        '\u{e0001}',
        '\u{e007f}',
        '\u{e0080}',
        '\u0600',
        '\u2064',
        '\u2065',
        '\ufff9',
      ],
    ];
    const { whole } = python([pattern], names);
    const readings = Object.entries(engines).map(([engine, compile]) => [engine, compile(pattern)] as const);
    for (const [index, name] of names.entries()) {
      const rest = await server.post('/v1/pets', { name, categoryId: 1 });
      const trpc = await server.post('/trpc/pets.create', { name, categoryId: 1 });
      const served = rest.status === 201;
      expect(rest.status, JSON.stringify(name)).toBe(served ? 201 : 400);
      expect(trpc.status, JSON.stringify(name)).toBe(served ? 200 : 400);
      expect(whole[0]![index], `Python fullmatch: ${JSON.stringify(name)}`).toBe(served);
      for (const [engine, matches] of readings) expect(matches(name), `${engine}: ${JSON.stringify(name)}`).toBe(served);
    }
  });

  it('decides as the service does on any name: ECMA-262 (u) and RE2 on 10,000, Python’s fullmatch on 3,000', () => {
    const pattern = doc.components.schemas.Pet.properties.name.pattern as string;
    const readings = [new RegExp(pattern, 'u'), RE2JS.compile(pattern)];
    const names = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 100, size: 'max' }),
      fc.string({
        unit: fc.constantFrom(' ', '\u200B', '\u00AD', '\uFEFF', '\u{E0020}', '\u3000', '\ud800', '\udc00', '\t', 'a', '🐈'),
        maxLength: 8,
      }),
    );
    fc.assert(
      fc.property(names, (name) => {
        for (const reading of readings)
          expect(reading.test(name), `${String(reading).slice(0, 20)}: ${JSON.stringify(name)}`).toBe(accepted(name));
      }),
      { numRuns: 10_000 },
    );
    const sample = fc.sample(names, { numRuns: 3_000, seed: 39 });
    const { whole } = python([pattern], sample);
    sample.forEach((name, index) => expect(whole[0]![index], `Python fullmatch: ${JSON.stringify(name)}`).toBe(accepted(name)));
  });
});
