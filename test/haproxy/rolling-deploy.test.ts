// A rolling deploy behind a real HAProxy costs no request and no write: three instances on one
// PostgreSQL database, HAProxy checking /readyz (inter 500ms fall 2 rise 2) with keep-alive on both
// sides, steady load from kept-alive clients (REST creates and lists, tRPC lists); one instance at a
// time, a replacement is started and enabled, and the old one gets SIGTERM. Every request succeeds,
// every acknowledged create is in the database, and each instance exits 0. What makes it work is
// the drain (SHUTDOWN_DRAIN_MS, docs/operations.md, "Stopping behind a load balancer").
import { afterAll, describe, expect, it } from 'vitest';
import { answered, useFleet } from '../support/fleet.js';
import { freePort } from '../support/free-port.js';
import { startPrivateHaproxy, type PrivateHaproxy } from '../support/private-haproxy.js';
import { acknowledgedIds, startSteadyLoad, unsuccessful } from '../support/steady-load.js';

const KEY = 'haproxy-rolling-key-0123456789';
/** The checks of the test's HAProxy; the drain outlasts (fall + 1) × inter, as docs/operations.md says. */
const CHECK = { inter: '500ms', fall: 2, rise: 2 };
const DRAIN_MS = 3_000;
const INSTANCES = 3;

const fleet = useFleet({ API_KEYS: KEY, RATE_LIMIT_PER_MINUTE: '0', SHUTDOWN_DRAIN_MS: String(DRAIN_MS), SHUTDOWN_TIMEOUT_MS: '15000' });
const startInstance = fleet.start;
let haproxy: PrivateHaproxy | undefined;
afterAll(() => haproxy?.stop());

describe('a rolling deploy of three instances behind HAProxy', () => {
  it('costs no request and no write: SIGTERM one at a time, each replaced', { timeout: 180_000 }, async () => {
    const ports = await Promise.all(Array.from({ length: 2 * INSTANCES }, () => freePort()));
    // The first instance migrates the new database; the others find it up to date.
    const first = await startInstance(ports[0]!);
    const old = [first, ...(await Promise.all(ports.slice(1, INSTANCES).map(startInstance)))];
    // The replacements' slots wait in maintenance until their instance listens.
    haproxy = await startPrivateHaproxy({
      servers: ports.map((port, index) => ({ name: `s${index + 1}`, port, disabled: index >= INSTANCES })),
      check: CHECK,
    });
    for (let index = 0; index < INSTANCES; index++) await haproxy.waitFor(`s${index + 1}`, 'UP');

    const load = startSteadyLoad({
      baseUrl: haproxy.baseUrl,
      apiKey: KEY,
      restClients: 4,
      trpcClients: 1,
      maxRequestsPerClient: 20_000,
      maxMs: 150_000,
    });
    const exitCodes: Array<number | null> = [];
    try {
      for (let index = 0; index < INSTANCES; index++) {
        const replacement = await startInstance(ports[INSTANCES + index]!);
        await haproxy.enable(`s${INSTANCES + index + 1}`);
        await haproxy.waitFor(`s${INSTANCES + index + 1}`, 'UP');
        const before = answered(old[index]!);
        exitCodes.push(await old[index]!.stop());
        // It served until it was taken out: the balancer did send it requests while it drained,
        // or it had none left to send; either way none failed (below).
        expect(answered(old[index]!)).toBeGreaterThanOrEqual(before);
        expect(replacement.child.exitCode).toBeNull();
      }
      // The last replacement takes traffic before the load ends.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    } finally {
      await load.stop();
    }
    const exchanges = load.exchanges;
    expect(exitCodes).toEqual([0, 0, 0]);
    expect(unsuccessful(exchanges).map(({ call, status, error, body }) => ({ call, status, error, body: body.slice(0, 200) }))).toEqual([]);
    expect(exchanges.filter((e) => e.call === 'trpc-list').length).toBeGreaterThan(0);
    // Every replacement served part of the load.
    for (const service of fleet.services.slice(INSTANCES)) expect(answered(service)).toBeGreaterThan(0);

    // No acknowledged write was lost.
    const ids = acknowledgedIds(exchanges);
    expect(ids.length).toBeGreaterThan(50);
    const stored = new Set((await fleet.pets()).map((pet) => pet.id));
    expect(ids.filter((id) => !stored.has(id))).toEqual([]);
  });
});
