// Shared limits at the cost of a lease, not a round trip per request (docs/security.md, "Across
// instances"): two instances' counters (src/limits/redis-limiter.ts) on one private redis-server,
// each leasing units of a key's budget and spending them locally. What is held: never more than
// the limit across both, exactly the limit when both spend what they lease, units left unused on
// one instance given back, and a Redis restarted empty costing no key its budget again.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { LimitDecision, Limiter } from '../../src/limits/fixed-window-limiter.js';
import { RedisCounters } from '../../src/limits/redis-limiter.js';
import { describeRedisFault } from '../../src/limits/request-limiters.js';
import { redisTracker } from '../../src/observability/dependencies.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

let redis: PrivateRedis | undefined;
let observer: Redis | undefined;
let instances: RedisCounters[] = [];
afterEach(async () => {
  await Promise.all(instances.map((counters) => counters.close()));
  instances = [];
  observer?.disconnect();
  observer = undefined;
  await redis?.stop();
  redis = undefined;
});

/** `count` instances' counters on one private Redis, and a connection of the test's own to look into it. */
async function onPrivateRedis(count: number): Promise<{ counters: RedisCounters[]; redis: PrivateRedis; observer: Redis }> {
  redis = await startPrivateRedis();
  instances = Array.from(
    { length: count },
    () => new RedisCounters(redis!.url, redisTracker(redis!.url, pino({ level: 'silent' }), describeRedisFault)),
  );
  await Promise.all(instances.map((counters) => counters.connected()));
  observer = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  observer.on('error', () => {}); // reconnection attempts while the test stops Redis
  await observer.connect();
  return { counters: instances, redis, observer };
}

/** How many scripts Redis ran: each lease or release is one. */
async function scriptsRun(observer: Redis): Promise<number> {
  const stats = await observer.info('commandstats');
  return [...stats.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
}

const uniqueKey = () => `key-${randomBytes(8).toString('hex')}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Takes from each limiter in turn, one request at a time; how many each let through. */
async function takeInTurn(limiters: Limiter[], key: string, requests: number): Promise<number[]> {
  const allowed = limiters.map(() => 0);
  for (let i = 0; i < requests; i++) if ((await limiters[i % limiters.length]!.take(key)).allowed) allowed[i % limiters.length]! += 1;
  return allowed;
}

describe('a key budget leased in chunks from Redis', () => {
  it('asks Redis once a lease, not once a request, and answers most requests without waiting, with the exact remaining', async () => {
    const { counters, observer } = await onPrivateRedis(1);
    const limiter = counters[0]!.limiter('per-key', 100_000);
    const key = uniqueKey();
    const before = await scriptsRun(observer);
    let waited = 0;
    const remaining: number[] = [];
    for (let i = 0; i < 2_000; i++) {
      const taken = limiter.take(key);
      if (taken instanceof Promise) waited += 1;
      const decision: LimitDecision = await taken;
      expect(decision.allowed).toBe(true);
      remaining.push(decision.remaining);
    }
    // Leases of 100 units: 20 of them.
    expect(await scriptsRun(observer)).toBeLessThanOrEqual(before + 25);
    expect(waited).toBeLessThanOrEqual(25);
    expect(remaining).toEqual(Array.from({ length: 2_000 }, (_, i) => 100_000 - 1 - i));
  });

  it('two instances let through exactly the limit between them, whichever way the requests come, and announce what is left within a lease', async () => {
    const { counters } = await onPrivateRedis(2);
    const [a, b] = counters.map((c) => c.limiter('per-key', 40));
    // One request at a time, in turn: the remaining each announces is off the truth by at most the
    // other instance's lease (the largest for a limit of 40 is 3: 1/16 of what is left, rounded up).
    const key = uniqueKey();
    let served = 0;
    for (let i = 0; i < 100; i++) {
      const decision = await [a!, b!][i % 2]!.take(key);
      if (decision.allowed) served += 1;
      expect(Math.abs(decision.remaining - (40 - served))).toBeLessThanOrEqual(3);
    }
    expect(served).toBe(40);
    // All at once, on both.
    const burst = uniqueKey();
    const answers = await Promise.all(Array.from({ length: 150 }, async (_, i) => [a!, b!][i % 2]!.take(burst)));
    expect(answers.filter((answer) => answer.allowed)).toHaveLength(40);
  });

  it("counts a batch's calls together, all or none, and never past the limit", async () => {
    const { counters } = await onPrivateRedis(2);
    const [a, b] = counters.map((c) => c.limiter('per-key', 40));
    const key = uniqueKey();
    const batches: boolean[] = [];
    for (let i = 0; i < 8; i++) batches.push((await [a!, b!][i % 2]!.take(key, 7)).allowed);
    expect(batches).toEqual([true, true, true, true, true, false, false, false]);
    // The 5 units left went to the instance that asked for 7: single requests still get them.
    expect((await takeInTurn([a!, b!], key, 20)).reduce((sum, n) => sum + n, 0)).toBe(5);
  });

  it('units left unused on one instance go back after a second, and the other instance gets them', { timeout: 15_000 }, async () => {
    const { counters } = await onPrivateRedis(2);
    const [a, b] = counters.map((c) => c.limiter('per-key', 40));
    const key = uniqueKey();
    // The key's traffic starts on a, then moves to b: a leased more than the one request it served.
    expect((await a!.take(key)).allowed).toBe(true);
    const [beforeRelease] = await takeInTurn([b!], key, 60);
    expect(beforeRelease).toBeLessThan(39);
    await sleep(2_500); // a gives its units back; b asks again a second after it was refused
    const [afterRelease] = await takeInTurn([b!], key, 20);
    expect(1 + beforeRelease! + afterRelease!).toBe(40);
  });

  it('an instance that stops gives back the units in its hand', async () => {
    const { counters } = await onPrivateRedis(2);
    const [a, b] = counters.map((c) => c.limiter('per-key', 40));
    const key = uniqueKey();
    expect((await a!.take(key)).allowed).toBe(true); // a holds 2 more
    await counters[0]!.close();
    expect(await takeInTurn([b!], key, 60)).toEqual([39]);
  });

  it(
    'after Redis restarts empty, each instance writes its units back: a key gets what was left of its budget, not its budget again',
    { timeout: 30_000 },
    async () => {
      const { counters, redis, observer } = await onPrivateRedis(2);
      const [a, b] = counters.map((c) => c.limiter('per-key', 40));
      const key = uniqueKey();
      expect(await takeInTurn([a!, b!], key, 30)).toEqual([15, 15]);

      await redis.stop();
      // While Redis is away, a counts alone (served: 5 more); b serves nothing.
      expect(await takeInTurn([a!], key, 5)).toEqual([5]);
      await redis.start(); // empty: it keeps nothing on disk
      // Both instances share through Redis again (a's next probe comes a second after its last
      // failure). Each wrote its units back when it reconnected, before anything else it sent.
      const deadline = Date.now() + 15_000;
      for (const instance of counters) {
        while ((await instance.run((client) => client.ping())) !== 'PONG') {
          expect(Date.now()).toBeLessThan(deadline);
          await sleep(100);
        }
      }
      expect(Number(await observer.hget(`animal-store:lease:per-key:${key}`, '#'))).toBeGreaterThanOrEqual(35);

      expect((await takeInTurn([a!, b!], key, 60)).reduce((sum, n) => sum + n, 0)).toBe(5);
    },
  );
});
