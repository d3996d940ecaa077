// Spec 4.1 (GET /pets) and section 8 (limits).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, json } from '../support/test-server.js';
import { expectError } from '../support/expect-error.js';
import { listQueryPlan } from '../support/query-plan.js';

let server: TestServer;
const statuses = ['available', 'pending', 'sold'] as const;

beforeAll(async () => {
  server = await startTestServer();
  // 130 pets: more than the maximum page, statuses in rotation.
  for (let i = 0; i < 130; i++) {
    const response = await server.post('/v1/pets', { name: `pet-${i}`, categoryId: (i % 7) + 1, status: statuses[i % 3] });
    expect(response.status).toBe(201);
  }
});
afterAll(() => server.close());

async function list(query = '') {
  const response = await server.request(`/v1/pets${query}`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  return (await json(response)) as Array<{ id: number; name: string; categoryId: number; status: string }>;
}

describe('GET /v1/pets (listPets)', () => {
  it('answers 200 with a bare array of pets, 20 by default', async () => {
    const pets = await list();
    expect(Array.isArray(pets)).toBe(true);
    expect(pets).toHaveLength(20);
    expect(pets[0]).toEqual({ id: 1, name: 'pet-0', categoryId: 1, status: 'available' });
  });

  it('returns pets in ascending id order, the same order on every call', async () => {
    const first = await list('?limit=100');
    const ids = first.map((pet) => pet.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(await list('?limit=100')).toEqual(first);
  });

  it.each([1, 7, 100])('limit=%i returns at most that many', async (limit) => {
    expect(await list(`?limit=${limit}`)).toHaveLength(limit);
  });

  it.each(statuses)('status=%s returns only pets with that status, in id order', async (status) => {
    const pets = await list(`?status=${status}&limit=100`);
    expect(pets.length).toBeGreaterThan(0);
    expect(pets.every((pet) => pet.status === status)).toBe(true);
    expect(pets.map((pet) => pet.name)).toEqual(
      Array.from({ length: 130 }, (_, i) => i)
        .filter((i) => statuses[i % 3] === status)
        .slice(0, 100)
        .map((i) => `pet-${i}`),
    );
  });

  it('combines status and limit', async () => {
    const pets = await list('?status=sold&limit=3');
    expect(pets.map((pet) => pet.name)).toEqual(['pet-2', 'pet-5', 'pet-8']);
  });

  it('ignores unknown query parameters', async () => {
    expect(await list('?limit=2&colour=red')).toHaveLength(2);
  });

  it.each([
    ['0', 'limit', /at least 1/],
    ['101', 'limit', /at most 100/],
    ['-1', 'limit', /at least 1/],
    ['2.5', 'limit', /integer/],
    ['abc', 'limit', /integer/],
    ['', 'limit', /empty/],
    ['1e1', 'limit', /integer/],
    ['0x10', 'limit', /integer/],
    ['%2010', 'limit', /integer/],
    ['99999999999999999999', 'limit', /at most 100/],
  ])('limit=%s → 400 naming %s', async (value, field, message) => {
    const body = await expectError(await server.request(`/v1/pets?limit=${value}`), 400, 'BAD_REQUEST', field);
    expect(body.message).toMatch(message);
  });

  it('limit given twice → 400', async () => {
    await expectError(await server.request('/v1/pets?limit=1&limit=2'), 400, 'BAD_REQUEST', /limit: must be given once/);
  });

  it.each(['unknown', 'AVAILABLE', '', '1'])('status=%s → 400 listing the allowed values', async (value) => {
    await expectError(await server.request(`/v1/pets?status=${value}`), 400, 'BAD_REQUEST', /status/);
  });

  it('status filter and limit are served by an index, not a scan of the table (pages: list-pagination.test.ts)', async () => {
    // A table of its own, large and skewed enough that a planner that weighs costs (PostgreSQL's)
    // prefers the index for real: 4,900 available pets and 100 sold ones, with statistics.
    const big = await startTestServer();
    try {
      await big.database.prisma.pet.createMany({
        data: Array.from({ length: 5_000 }, (_, i) => ({ name: `pet-${i}`, categoryId: 1n, status: i % 50 === 0 ? 'sold' : 'available' })),
      });
      await big.database.prisma.$executeRawUnsafe('ANALYZE');

      const filtered = await listQueryPlan(big.database, { status: 'sold', limit: 20 });
      expect(filtered.indexes).toContain('pets_status_id_idx');
      expect(filtered).toMatchObject({ sorts: false, scansTable: false });

      const unfiltered = await listQueryPlan(big.database, { limit: 20 });
      expect(unfiltered).toMatchObject({ sorts: false, scansTable: false });
    } finally {
      await big.close();
    }
  });
});
