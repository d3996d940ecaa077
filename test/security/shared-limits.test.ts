// One budget across instances: with REDIS_URL, two service processes on one
// PostgreSQL database share the per-key limit and the wrong-key limit exactly. When Redis stops
// answering, each instance falls back to its own counts (served, still limited, logged), and
// shares again once Redis is back.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startPrivateRedis, testRedis, type PrivateRedis } from '../support/private-redis.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let running: ServiceProcess[] = [];
let database: TestDatabase | undefined;
let releaseRedis: (() => Promise<void>) | undefined;
afterEach(async () => {
  await Promise.all(running.map((instance) => instance.stop()));
  running = [];
  await database?.drop();
  database = undefined;
  await releaseRedis?.();
  releaseRedis = undefined;
});

/** A key and a client address of this test's own, so that a Redis shared with other tests shares no counts. */
const uniqueKey = () => `shared-${randomBytes(12).toString('hex')}`;
const uniqueAddress = () => `2001:db8:${randomBytes(2).toString('hex')}:${randomBytes(2).toString('hex')}::1`;

/** Starts `count` instances; those that started are in `into` (stopped by its owner) even when another failed. */
async function startInstances(count: number, env: Record<string, string>, into = running): Promise<ServiceProcess[]> {
  const starts = await Promise.allSettled(
    Array.from({ length: count }, () => startServiceProcess({ LOG_LEVEL: 'info', TRUST_PROXY: 'loopback', ...env })),
  );
  into.push(...starts.flatMap((start) => (start.status === 'fulfilled' ? [start.value] : [])));
  for (const start of starts) if (start.status === 'rejected') throw start.reason;
  return into;
}

async function get(baseUrl: string, path: string, headers: Record<string, string>) {
  const response = await fetch(baseUrl + path, { headers, signal: AbortSignal.timeout(20_000) });
  await response.arrayBuffer();
  return { status: response.status, retryAfter: response.headers.get('retry-after') };
}

describe('two instances on one PostgreSQL database and one Redis', () => {
  // One pair for both tests: the key budget is spent with the key, the wrong-key budget from
  // another client address (each test's own), and neither touches the other's.
  const key = uniqueKey();
  const instances: ServiceProcess[] = [];
  let pairDatabase: TestDatabase | undefined;
  let releasePairRedis: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const redis = await testRedis();
    releasePairRedis = redis.release;
    pairDatabase = await createTestDatabase('postgresql');
    const env = { DATABASE_URL: pairDatabase.url, API_KEYS: key, RATE_LIMIT_PER_MINUTE: '40', AUTH_FAILURES_PER_MINUTE: '10' };
    await startInstances(2, { ...env, REDIS_URL: redis.url }, instances);
  }, 120_000);
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.stop()));
    await pairDatabase?.drop();
    await releasePairRedis?.();
  });

  it('share one key budget of 40 exactly, across both surfaces: the rest 429 with Retry-After', { timeout: 120_000 }, async () => {
    const headers = { authorization: `Bearer ${key}`, 'x-forwarded-for': uniqueAddress() };

    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => get(instances[i % 2]!.baseUrl, i % 3 ? '/v1/pets?limit=1' : '/trpc/pets.list', headers)),
    );
    const warnings = instances.flatMap((instance) => instance.logs.filter((entry) => Number(entry.level) >= 40));
    expect(
      answers.filter((answer) => answer.status === 200),
      JSON.stringify(warnings),
    ).toHaveLength(40);
    const refused = answers.filter((answer) => answer.status !== 200);
    expect(refused).toHaveLength(60);
    for (const answer of refused) {
      expect(answer.status).toBe(429);
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(answer.retryAfter)).toBeLessThanOrEqual(60);
    }
  });

  it('share one wrong-key budget per client address', { timeout: 120_000 }, async () => {
    const address = uniqueAddress();
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        get(instances[i % 2]!.baseUrl, '/v1/pets', { authorization: `Bearer guess-${i}-${'x'.repeat(20)}`, 'x-forwarded-for': address }),
      ),
    );
    // A Redis that did not answer in time (a loaded machine) would show here: each instance counting alone.
    const warnings = instances.flatMap((instance) => instance.logs.filter((entry) => Number(entry.level) >= 40));
    expect(
      answers.filter((answer) => answer.status === 401),
      JSON.stringify(warnings),
    ).toHaveLength(10);
    expect(answers.filter((answer) => answer.status === 429)).toHaveLength(40);
  });
});

describe('Redis stopping under load', () => {
  let redis: PrivateRedis | undefined;
  afterEach(async () => {
    await redis?.stop();
    redis = undefined;
  });

  it(
    'fails open to per-instance counts: every request answered, the limit still held by the instance, logged both ways',
    { timeout: 120_000 },
    async () => {
      redis = await startPrivateRedis();
      database = await createTestDatabase('sqlite');
      const key = uniqueKey();
      const [instance] = await startInstances(1, {
        DATABASE_URL: database.url,
        API_KEYS: key,
        RATE_LIMIT_PER_MINUTE: '300',
        REDIS_URL: redis.url,
      });
      const headers = { authorization: `Bearer ${key}` };
      const load = async (count: number) => {
        const statuses: number[] = [];
        let next = 0;
        await Promise.all(
          Array.from({ length: 6 }, async () => {
            while (next++ < count) statuses.push((await get(instance!.baseUrl, '/v1/pets?limit=1', headers)).status);
          }),
        );
        return statuses;
      };

      // 20 of the key's 300 counted in Redis; then Redis stops in the middle of the next burst, long
      // enough that the instance needs more leases after the stop.
      expect(await load(20)).toEqual(Array(20).fill(200));
      const during = load(400);
      await new Promise((resolve) => setTimeout(resolve, 20));
      await redis.stop();
      const statuses = await during;

      // Every request answered (no 5xx, no hang); the instance counts alone now, the 20 it served
      // before included, so the key has the rest of its 300 here, and no more.
      expect(statuses.filter((status) => status !== 200 && status !== 429)).toEqual([]);
      const served = statuses.filter((status) => status === 200).length;
      expect(served).toBeGreaterThanOrEqual(10);
      expect(served).toBeLessThanOrEqual(280);
      expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(0);
      expect(instance!.logs.some((entry) => entry.level === 40 && /Redis is not answering/.test(String(entry.msg)))).toBe(true);

      // Redis back (empty: it keeps nothing on disk): the instance shares counts through it again.
      await redis.start();
      const deadline = Date.now() + 15_000;
      while (!instance!.logs.some((entry) => /Redis answers again/.test(String(entry.msg))) && Date.now() < deadline) {
        await get(instance!.baseUrl, '/v1/pets?limit=1', headers);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(instance!.logs.some((entry) => entry.level === 30 && /Redis answers again/.test(String(entry.msg)))).toBe(true);
    },
  );
});

describe('Redis restarted empty', () => {
  let redis: PrivateRedis | undefined;
  afterEach(async () => {
    await redis?.stop();
    redis = undefined;
  });

  it(
    'hands no key its budget again: the instances write their counts back, and the key gets what was left',
    { timeout: 120_000 },
    async () => {
      redis = await startPrivateRedis();
      database = await createTestDatabase('sqlite');
      const key = uniqueKey();
      const instances = await startInstances(2, {
        DATABASE_URL: database.url,
        API_KEYS: key,
        RATE_LIMIT_PER_MINUTE: '40',
        REDIS_URL: redis.url,
      });
      const headers = { authorization: `Bearer ${key}` };
      const inTurn = async (count: number) => {
        const statuses: number[] = [];
        for (let i = 0; i < count; i++) statuses.push((await get(instances[i % 2]!.baseUrl, '/v1/pets?limit=1', headers)).status);
        return statuses;
      };
      expect(await inTurn(30)).toEqual(Array(30).fill(200));

      await redis.stop();
      await redis.start(); // empty: it keeps nothing on disk
      // Both instances reconnect and write their units of the key's window back (at least the 30 served).
      const observer = new Redis(redis.url, { maxRetriesPerRequest: 1 });
      try {
        // (Waited for up to 10 s; the counts below say whether it happened.)
        const deadline = Date.now() + 10_000;
        const taken = async () => {
          const keys = await observer.keys('animal-store:lease:per-key:*');
          return keys.length === 1 ? Number(await observer.hget(keys[0]!, '#')) : 0;
        };
        while ((await taken()) < 30 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      } finally {
        observer.disconnect();
      }

      const after = await inTurn(60);
      expect(after.filter((status) => status === 200)).toHaveLength(10);
      expect(after.filter((status) => status === 429)).toHaveLength(50);
    },
  );
});
