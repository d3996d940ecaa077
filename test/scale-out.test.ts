// Scale-out: instances are stateless, so several processes can serve one database side by side.
// Two real service processes start together on one fresh database (both migrate it at start-up)
// and take 500 creates each at the same time: every create is acknowledged with 201, the ids are
// all distinct, and every pet is listed (walking the pages through their Link headers) and can be
// read, whichever instance is asked. Both run the one repository (prepared statements on the
// drivers' connections, src/db/sql.ts).
import { afterEach, describe, expect, it } from 'vitest';
import type { Provider } from '../src/db/providers.js';
import { startServiceProcess, type ServiceProcess } from './support/service-process.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

const KEY = 'scale-out-key-0123456789';
const CREATES_PER_INSTANCE = 500;
/** Requests in flight per instance at any moment: enough to overlap, bounded for a shared 2-core machine. */
const IN_FLIGHT_PER_INSTANCE = 16;
/** Two process start-ups and 2,000 requests on a shared 2-core machine: a generous bound, not a speed test. */
const TEST_BOUND_MS = 180_000;

let running: ServiceProcess[] = [];
let database: TestDatabase | undefined;
afterEach(async () => {
  await Promise.all(running.map((instance) => instance.stop()));
  running = [];
  await database?.drop();
  database = undefined;
});

async function createMany(baseUrl: string, prefix: string): Promise<Array<{ status: number; body: { id?: number } }>> {
  const results: Array<{ status: number; body: { id?: number } }> = [];
  let next = 0;
  const worker = async () => {
    while (next < CREATES_PER_INSTANCE) {
      const i = next++;
      const response = await fetch(`${baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `${prefix}-${i}`, categoryId: 1 + (i % 5) }),
        signal: AbortSignal.timeout(30_000),
      });
      results.push({ status: response.status, body: (await response.json()) as { id?: number } });
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT_PER_INSTANCE }, worker));
  return results;
}

describe.each(['postgresql', 'sqlite'] as const)('two instances on one %s database', (provider: Provider) => {
  it(
    `both start on a fresh database, take ${CREATES_PER_INSTANCE} creates each at once, and lose none`,
    { timeout: TEST_BOUND_MS },
    async () => {
      database = await createTestDatabase(provider);
      // One key sends all 2,000 requests: the per-key rate limit is not what this test is about.
      const env = { DATABASE_URL: database.url, API_KEYS: KEY, LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '0' };
      const starts = await Promise.allSettled([startServiceProcess(env), startServiceProcess(env)]);
      running = starts.flatMap((start) => (start.status === 'fulfilled' ? [start.value] : []));
      for (const start of starts) if (start.status === 'rejected') throw start.reason;
      const [a, b] = running as [ServiceProcess, ServiceProcess];

      const [fromA, fromB] = await Promise.all([createMany(a.baseUrl, 'a'), createMany(b.baseUrl, 'b')]);
      const all = [...fromA, ...fromB];
      expect(all.filter((result) => result.status !== 201)).toEqual([]);
      const ids = all.map((result) => result.body.id);
      expect(new Set(ids).size).toBe(2 * CREATES_PER_INSTANCE);

      // Walking the list (100 a page, following the Link headers) on either instance gives every
      // acknowledged pet once, in id order; and each can be read back by id through the other one.
      const sorted = [...ids].sort((x, y) => x! - y!);
      for (const instance of running) {
        const walked: number[] = [];
        for (let next: string | null = '/v1/pets?limit=100'; next !== null && walked.length <= sorted.length;) {
          const page = await fetch(instance.baseUrl + next, { headers: { authorization: `Bearer ${KEY}` } });
          expect(page.status).toBe(200);
          walked.push(...((await page.json()) as Array<{ id: number }>).map((pet) => pet.id));
          next = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1] ?? null;
        }
        expect(walked).toEqual(sorted);
      }
      const seen = new Set<number>();
      for (const [index, id] of ids.entries()) {
        const other = index < CREATES_PER_INSTANCE ? b : a;
        const response = await fetch(`${other.baseUrl}/v1/pets/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
        expect(response.status).toBe(200);
        seen.add(((await response.json()) as { id: number }).id);
      }
      expect(seen.size).toBe(2 * CREATES_PER_INSTANCE);
    },
  );
});
