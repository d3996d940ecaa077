// Keyset pagination of listPets: `after` on REST and tRPC, the RFC 8288 `Link` header
// to the next page on REST, and the whole inventory reachable, each pet once and in order, even
// while pets are being added. Runs on every provider (test/vitest.config.ts).
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/root-router.js';
import { expectError } from '../support/expect-error.js';
import { listQueryPlan } from '../support/query-plan.js';
import { API_KEY, json, startTestServer, type TestServer } from '../support/test-server.js';

const STATUSES = ['available', 'pending', 'sold'] as const;
const INVENTORY = 250;

interface PetBody {
  id: number;
  name: string;
  categoryId: number;
  status: string;
}

let server: TestServer;
let trpc: ReturnType<typeof createTRPCClient<AppRouter>>;
/** Every pet created, in creation order. */
const created: PetBody[] = [];

async function create(i: number): Promise<PetBody> {
  const response = await server.post('/v1/pets', { name: `walk-${i}`, categoryId: (i % 7) + 1, status: STATUSES[i % 3] });
  expect(response.status).toBe(201);
  const pet = (await json(response)) as PetBody;
  created.push(pet);
  return pet;
}

beforeAll(async () => {
  server = await startTestServer();
  trpc = createTRPCClient<AppRouter>({
    links: [httpLink({ url: `${server.baseUrl}/trpc`, headers: { authorization: `Bearer ${API_KEY}` } })],
  });
  for (let i = 0; i < INVENTORY; i++) await create(i);
});
afterAll(() => server.close());

/** The target of a `Link: <…>; rel="next"` header, or null without one. */
function nextLink(response: Response): string | null {
  const header = response.headers.get('link');
  if (header === null) return null;
  const match = /^<([^>]+)>; rel="next"$/.exec(header);
  expect(match, `Link header: ${header}`).not.toBeNull();
  return match![1]!;
}

/**
 * Follows the Link headers from `path` to the last page, as a client would, calling `between`
 * after each page. Returns every id seen, in the order seen, and the pages' sizes.
 */
async function walkRest(path: string, between: () => Promise<void> = async () => {}): Promise<{ ids: number[]; pages: number[] }> {
  const ids: number[] = [];
  const pages: number[] = [];
  for (let next: string | null = path; next !== null;) {
    const response = await server.request(next);
    expect(response.status).toBe(200);
    const page = (await json(response)) as PetBody[];
    expect(Array.isArray(page)).toBe(true);
    ids.push(...page.map((pet) => pet.id));
    pages.push(page.length);
    next = nextLink(response);
    if (pages.length > 1_000) throw new Error('the walk does not end');
    await between();
  }
  return { ids, pages };
}

const ascending = (ids: number[]) => ids.every((id, i) => i === 0 || id > ids[i - 1]!);

describe('listPets with after (REST)', () => {
  it('walks the whole inventory through the Link headers: every pet once, in id order', async () => {
    const { ids, pages } = await walkRest('/v1/pets?limit=100');
    expect(ids).toEqual(created.slice(0, INVENTORY).map((pet) => pet.id));
    expect(pages).toEqual([100, 100, 50]);
  });

  it.each(STATUSES)('walks the pets with status=%s the same way', async (status) => {
    const { ids } = await walkRest(`/v1/pets?status=${status}&limit=9`);
    const expected = created
      .slice(0, INVENTORY)
      .filter((pet) => pet.status === status)
      .map((pet) => pet.id);
    expect(expected.length).toBeGreaterThan(80);
    expect(ids).toEqual(expected);
  });

  it('the Link keeps limit and status, and points after the last id of the page', async () => {
    const response = await server.request('/v1/pets?status=pending&limit=3');
    const page = (await json(response)) as PetBody[];
    expect(page).toHaveLength(3);
    expect(response.headers.get('link')).toBe(`</v1/pets?limit=3&status=pending&after=${page[2]!.id}>; rel="next"`);
    // Without a limit, the default page size is spelt out in the link.
    const byDefault = await server.request('/v1/pets');
    const defaultPage = (await json(byDefault)) as PetBody[];
    expect(byDefault.headers.get('link')).toBe(`</v1/pets?limit=20&after=${defaultPage[19]!.id}>; rel="next"`);
  });

  it('a short page is the last: no Link; a full last page links to an empty one', async () => {
    const lastId = created[INVENTORY - 1]!.id;
    const short = await server.request(`/v1/pets?limit=100&after=${created[INVENTORY - 5]!.id}`);
    expect(((await json(short)) as PetBody[]).map((pet) => pet.id)).toEqual(created.slice(INVENTORY - 4, INVENTORY).map((pet) => pet.id));
    expect(short.headers.get('link')).toBeNull();

    const full = await server.request(`/v1/pets?limit=2&after=${created[INVENTORY - 3]!.id}`);
    expect(nextLink(full)).toBe(`/v1/pets?limit=2&after=${lastId}`);
    const beyond = await server.request(`/v1/pets?limit=2&after=${lastId}`);
    expect(await json(beyond)).toEqual([]);
    expect(beyond.headers.get('link')).toBeNull();
  });

  it('after an id that does not exist (deleted, or between two) starts at the next larger one', async () => {
    const [a, b] = [created[10]!, created[11]!];
    expect(await json(server.request(`/v1/pets?limit=1&after=${a.id}`))).toEqual([b]);
    expect(await json(server.request(`/v1/pets?limit=1&after=${Number.MAX_SAFE_INTEGER}`))).toEqual([]);
  });

  it.each([
    ['abc', /after: must be an integer/],
    ['1.5', /after: must be an integer/],
    ['0x10', /after: must be an integer/],
    ['1e3', /after: must be an integer/],
    [' 5', /after: must be an integer/],
    ['0', /after/],
    ['-1', /after/],
    ['9007199254740992', /after/],
    ['', /after: must not be empty/],
  ])('after=%j → 400 naming after', async (value, message) => {
    await expectError(await server.request(`/v1/pets?after=${encodeURIComponent(value)}`), 400, 'BAD_REQUEST', message);
  });

  it('after given twice → 400', async () => {
    await expectError(await server.request('/v1/pets?after=1&after=2'), 400, 'BAD_REQUEST', /after: must be given once/);
  });
});

describe('walking while pets are added', () => {
  it('sees every pet once, in order, including those created during the walk (with and without status)', async () => {
    // Five new pets after each of the first 8 pages: well before the walk (25 a page) reaches them.
    let i = INVENTORY;
    const addFive = async () => {
      for (let n = 0; n < 5 && i < INVENTORY + 40; n++) await create(i++);
    };
    const all = await walkRest('/v1/pets?limit=25', addFive);
    // Every pet that exists when the walk ends: the 250 and the 40 created along the way.
    const everyId = created.map((pet) => pet.id);
    expect(i).toBe(INVENTORY + 40);
    expect(ascending(all.ids)).toBe(true);
    expect(all.ids).toEqual(everyId);

    const before = created.length;
    const sold = await walkRest('/v1/pets?status=sold&limit=10', async () => {
      for (let n = 0; n < 3 && created.length < before + 30; n++) await create(created.length);
    });
    expect(ascending(sold.ids)).toBe(true);
    expect(sold.ids).toEqual(created.filter((pet) => pet.status === 'sold').map((pet) => pet.id));
  });
});

describe('listPets with after (tRPC)', () => {
  async function walkTrpc(status?: (typeof STATUSES)[number]): Promise<number[]> {
    const ids: number[] = [];
    let after: number | undefined;
    for (;;) {
      const page = await trpc.pets.list.query({ limit: 50, status, after });
      ids.push(...page.map((pet) => pet.id));
      if (page.length < 50) return ids;
      after = page[page.length - 1]!.id;
    }
  }

  it('the client walks the inventory with the last id of each page', async () => {
    expect(await walkTrpc()).toEqual(created.map((pet) => pet.id));
    expect(await walkTrpc('available')).toEqual(created.filter((pet) => pet.status === 'available').map((pet) => pet.id));
  });

  it('answers carry no Link header (it is REST’s); bad after → BAD_REQUEST', async () => {
    const response = await server.request(`/trpc/pets.list?input=${encodeURIComponent(JSON.stringify({ limit: 1 }))}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('link')).toBeNull();
    for (const after of [0, 1.5, '7', -3]) {
      const error = await trpc.pets.list.query({ after: after as number }).then(
        () => null,
        (cause: unknown) => cause,
      );
      expect(error).toBeInstanceOf(TRPCClientError);
      expect((error as TRPCClientError<AppRouter>).data?.code).toBe('BAD_REQUEST');
    }
  });
});

describe('the OpenAPI document', () => {
  it('documents after and the Link response header of listPets', async () => {
    const document = await json(server.request('/v1/openapi.json'));
    const operation = document.paths['/pets'].get;
    const after = operation.parameters.find((parameter: { name: string }) => parameter.name === 'after');
    expect(after).toMatchObject({ in: 'query', schema: { type: 'integer', format: 'int64', minimum: 1 } });
    expect(after.required ?? false).toBe(false);
    expect(JSON.stringify(after)).toMatch(/last `id` of the previous page/);
    expect(operation.responses['200'].headers.Link.description).toMatch(/rel="next"/);
  });
});

describe('pages are served by the indexes', () => {
  it('at any page, with or without status: an index range read in order, no scan, no sort', { timeout: 60_000 }, async () => {
    // A table of its own, large and skewed enough that PostgreSQL's cost-based planner is tempted:
    // 4,900 available pets and 100 sold ones, with statistics.
    const big = await startTestServer();
    try {
      await big.database.prisma.pet.createMany({
        data: Array.from({ length: 5_000 }, (_, i) => ({ name: `pet-${i}`, categoryId: 1n, status: i % 50 === 0 ? 'sold' : 'available' })),
      });
      await big.database.prisma.$executeRawUnsafe('ANALYZE');
      const generics = big.database.provider === 'postgresql' ? [false, true] : [false];
      for (const generic of generics) {
        for (const after of [0, 2_500, 4_990]) {
          const filtered = await listQueryPlan(big.database, { status: 'sold', limit: 20, after, generic });
          expect(filtered.indexes, JSON.stringify({ generic, after })).toContain('pets_status_id_idx');
          expect(filtered, JSON.stringify({ generic, after })).toMatchObject({ sorts: false, scansTable: false });
          const unfiltered = await listQueryPlan(big.database, { limit: 20, after, generic });
          expect(unfiltered, JSON.stringify({ generic, after })).toMatchObject({ sorts: false, scansTable: false });
        }
      }
    } finally {
      await big.close();
    }
  });
});
