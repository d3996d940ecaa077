// Integers are decided by the JSON text, on both surfaces and every way into them (docs/decisions.md,
// "Integers in JSON"): REST bodies, query strings and paths; tRPC inputs answered directly and those
// handed to tRPC's own handler (batches). A number whose text is an integer in range is accepted as
// exactly that integer; one whose text is not an integer is refused as "must be an integer", even
// where JavaScript's JSON.parse would round it to one; an integer out of range is "must be at most"
// (or "at least"), however many digits it has.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anyNumberText, textsNear, verdict, type Verdict } from './support/number-texts.js';
import { startTestServer, type TestServer } from './support/test-server.js';

const MAX_ID = Number.MAX_SAFE_INTEGER;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
  await server.post('/v1/pets', { name: 'First', categoryId: 1 }); // pet 1, for the reads
});
afterAll(() => server.close());

/** An answer, reduced to what the verdict is about: the value read, or the first problem's words. */
type Outcome = { value: number } | { problem: string };

/** The words of the first input problem of `field` in a tRPC error (`data.zodError`; its message is the REST sentence). */
function trpcProblem(
  error: { message: string; data: { code: string; path?: string; zodError?: { fieldErrors: Record<string, string[]> } } },
  field: string,
): Outcome {
  expect(error.data.code).toBe('BAD_REQUEST');
  expect(error.message.startsWith(`${field}: `), error.message).toBe(true);
  return { problem: error.data.zodError!.fieldErrors[field]![0]! };
}

/** The REST envelope's problem for `field` (`categoryId: must be …`). */
async function restProblem(response: Response, field: string): Promise<Outcome> {
  const body = (await response.json()) as { code: string; message: string; status: number };
  expect(body).toMatchObject({ code: 'BAD_REQUEST', status: 400 });
  expect(body.message.startsWith(`${field}: `), body.message).toBe(true);
  return { problem: body.message.slice(field.length + 2) };
}

type TrpcItem = { result: { data: Record<string, unknown> } } | { error: { message: string; data: { code: string } } };

function trpcOutcome(item: TrpcItem, field: string, read: (data: Record<string, unknown>) => number): Outcome {
  return 'result' in item ? { value: read(item.result.data) } : trpcProblem(item.error, field);
}

const q = (text: string) => encodeURIComponent(text);
const get = (path: string) => server.request(path);
const createdCategory = (data: Record<string, unknown>) => data.categoryId as number;

/** Every way a number reaches a procedure, with the field's bounds and how the answer tells what was read. */
const WAYS: Array<{ way: string; min: number; max: number; send: (text: string) => Promise<Outcome> }> = [
  {
    way: 'REST createPet body',
    min: 1,
    max: MAX_ID,
    async send(text) {
      const response = await server.post('/v1/pets', `{"name":"Rest","categoryId":${text}}`);
      return response.status === 201
        ? { value: ((await response.json()) as { categoryId: number }).categoryId }
        : restProblem(response, 'categoryId');
    },
  },
  {
    way: 'tRPC pets.create, answered directly',
    min: 1,
    max: MAX_ID,
    async send(text) {
      const response = await server.post('/trpc/pets.create', `{"name":"Direct","categoryId":${text}}`);
      return trpcOutcome((await response.json()) as TrpcItem, 'categoryId', createdCategory);
    },
  },
  {
    way: 'tRPC pets.create in a batch (tRPC’s handler)',
    min: 1,
    max: MAX_ID,
    async send(text) {
      const body = `{"0":{"name":"Batched","categoryId":${text}},"1":{"name":""}}`;
      const response = await server.post('/trpc/pets.create,pets.create?batch=1', body);
      return trpcOutcome(((await response.json()) as TrpcItem[])[0]!, 'categoryId', createdCategory);
    },
  },
  {
    way: 'tRPC pets.list limit, answered directly',
    min: 1,
    max: 100,
    async send(text) {
      const response = await get(`/trpc/pets.list?input=${q(`{"limit":${text}}`)}`);
      return trpcOutcome((await response.json()) as TrpcItem, 'limit', () => NaN);
    },
  },
  {
    way: 'tRPC pets.get petId in a batch (tRPC’s handler)',
    min: 1,
    max: MAX_ID,
    async send(text) {
      const response = await get(`/trpc/pets.get,pets.list?batch=1&input=${q(`{"0":{"petId":${text}},"1":{"limit":1}}`)}`);
      const item = ((await response.json()) as TrpcItem[])[0]!;
      // An id read as an integer is looked up: pet 1 is found, any other is not (and the message says which id).
      if ('error' in item && item.error.data.code === 'NOT_FOUND') return { value: Number(/has id (\d+)/.exec(item.error.message)![1]) };
      return trpcOutcome(item, 'petId', (data) => data.id as number);
    },
  },
  {
    way: 'tRPC pets.list after, answered directly',
    min: 1,
    max: MAX_ID,
    async send(text) {
      const response = await get(`/trpc/pets.list?input=${q(`{"after":${text}}`)}`);
      return trpcOutcome((await response.json()) as TrpcItem, 'after', () => NaN);
    },
  },
];

/** Whether an outcome is what the verdict says; `readsValue` when the answer shows the value read. */
function expectVerdict(outcome: Outcome, expected: Verdict, readsValue: boolean) {
  if ('accepted' in expected) {
    expect(outcome).not.toHaveProperty('problem');
    if (readsValue) expect(BigInt((outcome as { value: number }).value)).toBe(expected.accepted);
  } else {
    expect(outcome).toHaveProperty('problem');
    expect((outcome as { problem: string }).problem.startsWith(expected.refused), (outcome as { problem: string }).problem).toBe(true);
  }
}

/** Texts JavaScript's JSON.parse rounds, integers written otherwise, and integers too long for a double. */
const EXAMPLES: Array<[string, Verdict]> = [
  ['0.99999999999999999999', { refused: 'must be an integer' }],
  ['1.0000000000000001', { refused: 'must be an integer' }],
  ['1e-400', { refused: 'must be an integer' }],
  ['1.5', { refused: 'must be an integer' }],
  ['1.0', { accepted: 1n }],
  ['1e1', { accepted: 10n }],
  ['-0', { refused: 'must be at least' }],
  ['123456789012345678901', { refused: 'must be at most' }],
  ['1e400', { refused: 'must be at most' }],
  ['9'.repeat(400), { refused: 'must be at most' }],
];

describe.each(WAYS)('$way', ({ way, min, max, send }) => {
  const readsValue = !way.includes('pets.list');

  it.each(EXAMPLES.map(([text, expected]) => [text.length > 30 ? `${text.length} digits` : text, text, expected] as const))(
    '%s',
    async (_label, text, expected) => {
      expectVerdict(await send(text), expected, readsValue);
    },
  );

  it('any number text: accepted as exactly its integer, or refused for the right reason', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(anyNumberText, textsNear(min, Math.min(max, 2 ** 31 - 1))), async (text) => {
        expectVerdict(await send(text), verdict(text, min, max), readsValue);
      }),
      { numRuns: 40 },
    );
  });
});

describe('REST query strings and paths: plain decimal digits, any length', () => {
  it('a petId or limit of any number of digits is an integer: in range, or "must be at most"', async () => {
    await fc.assert(
      fc.asyncProperty(fc.stringMatching(/^[1-9]\d{0,400}$/, { size: 'max' }), async (digits) => {
        for (const [path, field, max] of [
          [`/v1/pets/${digits}`, 'petId', MAX_ID],
          [`/v1/pets?limit=${digits}`, 'limit', 100],
        ] as const) {
          const response = await get(path);
          const expected = verdict(digits, 1, max);
          if ('accepted' in expected) expect([200, 404], path).toContain(response.status);
          else expectVerdict(await restProblem(response, field), expected, false);
        }
      }),
      { numRuns: 40 },
    );
  });
});

describe('deeply nested input (under the body limit)', () => {
  const deep = `${'['.repeat(20_000)}1.5${']'.repeat(20_000)}`;

  it('is refused as a REST body with 400, never 500', async () => {
    const response = await server.post('/v1/pets', `{"name":"Deep","categoryId":1,"x":${deep}}`);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toBe('body: Unrecognized key: "x"');
  });

  it('does not hide a rounded number from the rule, directly or in tRPC’s handler', async () => {
    const call = `{"name":"Deep","categoryId":0.99999999999999999999,"x":${deep}}`;
    const single = (await (await server.post('/trpc/pets.create', call)).json()) as TrpcItem;
    const batch = (await (await server.post('/trpc/pets.create,pets.create?batch=1', `{"0":${call},"1":{}}`)).json()) as TrpcItem[];
    for (const item of [single, batch[0]!])
      expect(trpcOutcome(item, 'categoryId', createdCategory)).toEqual({ problem: 'must be an integer' });
  });
});

describe('a `__proto__` key', () => {
  it('is an unknown field of a REST body (400), and pollutes nothing', async () => {
    for (const body of [
      '{"name":"P","categoryId":1,"__proto__":{"polluted":true}}',
      '{"name":"P","categoryId":1,"constructor":{"prototype":{"polluted":true}}}',
    ]) {
      const response = await server.post('/v1/pets', body);
      expect(response.status).toBe(400);
      const key = body.includes('__proto__') ? '__proto__' : 'constructor';
      expect(((await response.json()) as { message: string }).message).toBe(`body: Unrecognized key: "${key}"`);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it('is an unknown field of a tRPC input too, answered directly or by tRPC’s handler', async () => {
    const single = (await (await server.post('/trpc/pets.create', '{"name":"P","categoryId":1,"__proto__":{"x":1}}')).json()) as TrpcItem;
    const batch = (await (
      await server.post('/trpc/pets.create,pets.create?batch=1', '{"0":{"name":"P","categoryId":1,"__proto__":{"x":1}},"1":{}}')
    ).json()) as TrpcItem[];
    for (const item of [single, batch[0]!]) {
      expect('error' in item && item.error.message).toBe('body: Unrecognized key: "__proto__"');
    }
    expect(Object.prototype).not.toHaveProperty('x');
  });
});
