// A rolling deploy behind a real nginx, configured as docs/operations.md gives it (the ```nginx
// block, read from the page), costs no request and no write: three instances on one PostgreSQL
// database, kept-alive load (REST creates, each with an Idempotency-Key as docs/operations.md asks
// of creates behind nginx, and lists; tRPC lists); one instance at a time gets SIGTERM, drains (the
// default SHUTDOWN_DRAIN_MS, which the config's upstream keepalive_timeout is below) and exits, and
// its replacement starts on the same address. Every request succeeds, every answer is the
// service's own JSON, every acknowledged create is in the database once, and each instance exits 0.
// (test/nginx/retries.test.ts: what a create without a key meets in the moment an instance stops.)
import { afterAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { answered, useFleet } from '../support/fleet.js';
import { freePort } from '../support/free-port.js';
import { startPrivateNginx, type PrivateNginx } from '../support/private-nginx.js';
import { acknowledgedIds, startSteadyLoad, unsuccessful } from '../support/steady-load.js';

const KEY = 'nginx-rolling-key-0123456789';
const INSTANCES = 3;

/** Instances as docs/operations.md runs them behind nginx: the default drain (5 s) and stop timeout. */
const fleet = useFleet({ API_KEYS: KEY, RATE_LIMIT_PER_MINUTE: '0', TRUST_PROXY: '127.0.0.1', SHUTDOWN_DRAIN_MS: '5000' });
const startInstance = fleet.start;
let nginx: PrivateNginx | undefined;
afterAll(() => nginx?.stop());

async function until(condition: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}, after ${ms} ms`);
    await sleep(50);
  }
}

describe('a rolling deploy of three instances behind nginx, as docs/operations.md configures it', () => {
  it('costs no request and no write: SIGTERM one at a time, each replaced on its address', { timeout: 240_000 }, async () => {
    const ports = await Promise.all(Array.from({ length: INSTANCES }, () => freePort()));
    // The first instance migrates the new database; the others find it up to date.
    const old = [await startInstance(ports[0]!)];
    old.push(...(await Promise.all(ports.slice(1).map(startInstance))));
    nginx = await startPrivateNginx({ ports });

    const load = startSteadyLoad({
      baseUrl: nginx.baseUrl,
      apiKey: KEY,
      restClients: 4,
      keyedCreateClients: [0, 1, 2, 3],
      trpcClients: 1,
      maxRequestsPerClient: 20_000,
      maxMs: 180_000,
    });
    const exitCodes: Array<number | null> = [];
    try {
      await until(() => old.every((service) => answered(service) > 0), 'not every instance took part of the load');
      for (let index = 0; index < INSTANCES; index++) {
        exitCodes.push(await old[index]!.stop());
        const replacement = await startInstance(ports[index]!);
        // nginx sends to it again once the failure of its address has expired (fail_timeout, 10 s).
        await until(() => answered(replacement) > 0, `nginx sent nothing to the replacement on port ${ports[index]}`);
      }
    } finally {
      await load.stop();
    }
    const exchanges = load.exchanges;
    expect(exitCodes).toEqual([0, 0, 0]);
    expect(unsuccessful(exchanges).map(({ call, status, error, body }) => ({ call, status, error, body: body.slice(0, 200) }))).toEqual([]);
    // Every answer is the service's JSON.
    expect(exchanges.filter((e) => !/^application\/json/.test(e.contentType ?? ''))).toEqual([]);

    // No acknowledged write was lost, and none was made twice (a create nginx retried on another instance).
    const ids = acknowledgedIds(exchanges);
    expect(ids.length).toBeGreaterThan(50);
    const pets = await fleet.pets();
    const stored = new Set(pets.map((pet) => pet.id));
    expect(ids.filter((id) => !stored.has(id))).toEqual([]);
    expect(pets.length - new Set(pets.map((pet) => pet.name)).size).toBe(0);
  });
});
