// When Redis does not answer (docs/security.md, "Across instances"): a Redis slower than 2 s counts
// as down, and while it is down one request at a time tries it again, at most once a second; the
// others use the instance's own counts at once. Checked on the counters every limiter goes
// through (src/limits/redis-limiter.ts), against a private redis-server that is frozen (SIGSTOP:
// connected but silent, the slow case) or stopped (connections refused).
import { Writable } from 'node:stream';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisCounters } from '../../src/limits/redis-limiter.js';
import { describeRedisFault } from '../../src/limits/request-limiters.js';
import { redisTracker } from '../../src/observability/dependencies.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

let redis: PrivateRedis | undefined;
let counters: RedisCounters | undefined;
let frozenPid: number | undefined;
afterEach(async () => {
  if (frozenPid) process.kill(frozenPid, 'SIGCONT');
  frozenPid = undefined;
  await counters?.close();
  counters = undefined;
  await redis?.stop();
  redis = undefined;
});

/** Counters on a private Redis, with the log lines they write. */
async function countersOnPrivateRedis(): Promise<{
  counters: RedisCounters;
  redis: PrivateRedis;
  logs: Array<{ level: number; msg: string }>;
}> {
  redis = await startPrivateRedis();
  const logs: Array<{ level: number; msg: string }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
      done();
    },
  });
  counters = new RedisCounters(redis.url, redisTracker(redis.url, pino({ level: 'info' }, sink), describeRedisFault));
  await counters.connected();
  return { counters, redis, logs };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Redis not answering', () => {
  it('slower than 2 s counts as down: the command gives up after 2 s, and one probe at a time follows', { timeout: 30_000 }, async () => {
    const { counters, redis, logs } = await countersOnPrivateRedis();
    expect(await counters.run((client) => client.ping())).toBe('PONG');

    frozenPid = redis.pid()!;
    process.kill(frozenPid, 'SIGSTOP'); // connected, but silent
    const started = performance.now();
    expect(await counters.run((client) => client.ping())).toBeUndefined();
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(1_900);
    expect(waited).toBeLessThan(3_500);
    expect(logs.filter((entry) => entry.level === 40 && /Redis is not answering/.test(entry.msg))).toHaveLength(1);

    // A second later one request probes it (and waits its 2 s); the others meanwhile use the
    // fallback at once, without asking Redis.
    await sleep(1_100);
    let asked = 0;
    const ask = (client: Redis) => {
      asked += 1;
      return client.ping();
    };
    const probe = counters.run(ask);
    const othersStarted = performance.now();
    const others = await Promise.all(Array.from({ length: 20 }, () => counters.run(ask)));
    expect(others).toEqual(Array(20).fill(undefined));
    expect(performance.now() - othersStarted).toBeLessThan(500);
    expect(await probe).toBeUndefined();
    expect(asked).toBe(1);

    // Answering again: the next probe (a second after the last failure) gets through, and says so.
    process.kill(frozenPid, 'SIGCONT');
    frozenPid = undefined;
    await sleep(1_100);
    expect(await counters.run((client) => client.ping())).toBe('PONG');
    expect(logs.filter((entry) => entry.level === 30 && /Redis answers again/.test(entry.msg))).toHaveLength(1);
  });

  it('while down, it is tried again at most once a second, however many requests come', { timeout: 30_000 }, async () => {
    const { counters, redis, logs } = await countersOnPrivateRedis();
    await redis.stop();
    // The first request finds it down (until then every request asks Redis: none knows better).
    expect(await counters.run((client) => client.ping())).toBeUndefined();

    // 3.5 s of requests, 5 every 20 ms: each is answered (by the fallback), Redis is asked about 3 times.
    let asked = 0;
    let answered = 0;
    const until = performance.now() + 3_500;
    while (performance.now() < until) {
      const results = await Promise.all(
        Array.from({ length: 5 }, () =>
          counters.run((client) => {
            asked += 1;
            return client.ping();
          }),
        ),
      );
      answered += results.length;
      expect(results).toEqual(Array(5).fill(undefined));
      await sleep(20);
    }
    expect(answered).toBeGreaterThan(200);
    // One probe per second: 3 in 3.5 s (4 allows for the machine's delays).
    expect(asked).toBeGreaterThanOrEqual(2);
    expect(asked).toBeLessThanOrEqual(4);
    expect(logs.filter((entry) => entry.level === 40 && /Redis is not answering/.test(entry.msg))).toHaveLength(1);
  });
});
