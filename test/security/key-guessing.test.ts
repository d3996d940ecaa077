// Guessing keys: the wrong-key budget of a client address is taken before a key is
// checked, so pipelined or concurrent guesses cannot all be checked before the first failure is
// counted: at most the limit are checked (each checked wrong key is a 401, each unchecked one a
// 429), on both databases. A genuine client's burst is not refused. The client address cannot be
// chosen by the client (TRUST_PROXY names the proxies; the right-most untrusted address counts),
// and an IPv6 client is one /64.
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiKeyStore } from '../../src/auth/api-key-store.js';
import { canonicalAddress, clientLimitKey } from '../../src/http/request-record.js';
import type { Provider } from '../../src/db/providers.js';
import { API_KEY, startTestServer, type TestServer, type TestServerOptions } from '../support/test-server.js';

const LIMIT = 20;
const GUESSES = 120;
const PIPELINED = 4;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const guess = (i: number) => `Bearer guess-${i}-${'x'.repeat(24)}`;

/**
 * Sends all `requests` on one connection at once (HTTP/1.1 pipelining) and returns the statuses in
 * order, answered until the server closed the connection (it does after a refusal for want of a key).
 */
function pipeline(baseUrl: string, requests: string[]): Promise<number[]> {
  const { port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(requests.join('')));
    let received = '';
    const statuses = () => [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (statuses().length === requests.length) {
        socket.destroy();
        resolve(statuses());
      }
    });
    socket.on('close', () => resolve(statuses()));
    socket.on('error', reject);
    socket.setTimeout(30_000, () => reject(new Error(`only got: ${received.slice(0, 500)}`)));
  });
}

const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

async function start(provider: Provider, options: TestServerOptions['config'] = {}) {
  server = await startTestServer({ provider, config: { authFailuresPerMinute: LIMIT, ...options } });
  return server;
}

describe.each(['sqlite', 'postgresql'] as const)('wrong keys on %s', (provider) => {
  it(`pipelined, ${PIPELINED} to a connection: each connection answered once and closed; at most ${LIMIT} checked (401), the rest refused unchecked (429)`, async () => {
    const { baseUrl } = await start(provider);
    const statuses: number[] = [];
    for (let sent = 0; sent < GUESSES; sent += PIPELINED) {
      const requests = Array.from(
        { length: PIPELINED },
        (_, i) => `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${guess(sent + i)}\r\n\r\n`,
      );
      const answered = await pipeline(baseUrl, requests);
      expect(answered).toHaveLength(1);
      statuses.push(...answered);
    }
    // The pipelined guesses a connection had in flight when its first answer closed it were counted
    // (and checked while the budget lasted) but never answered: fewer 401s than the budget, never more.
    const checked = count(statuses, 401);
    expect(checked).toBeGreaterThanOrEqual(Math.ceil(LIMIT / PIPELINED));
    expect(checked).toBeLessThanOrEqual(LIMIT);
    expect(statuses).toEqual([...Array(checked).fill(401), ...Array(statuses.length - checked).fill(429)]);
  });

  it(`concurrent on many connections, both surfaces: ${LIMIT} checked, the rest refused unchecked`, async () => {
    const { baseUrl } = await start(provider);
    const statuses = await Promise.all(
      Array.from({ length: GUESSES }, async (_, i) => {
        const path = i % 2 ? '/v1/pets' : '/trpc/pets.list';
        return (await fetch(baseUrl + path, { headers: { authorization: guess(i) } })).status;
      }),
    );
    expect(count(statuses, 401)).toBe(LIMIT);
    expect(count(statuses, 429)).toBe(GUESSES - LIMIT);
  });

  it("a genuine client's burst with a stored key is not taken for guessing", async () => {
    const { baseUrl, database } = await start(provider, { authFailuresPerMinute: 5 });
    const { key } = await createApiKeyStore(database.prisma).create('burst');
    const statuses = await Promise.all(
      Array.from({ length: 60 }, async () => (await fetch(`${baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })).status),
    );
    expect(statuses).toEqual(Array(60).fill(200));
  });
});

describe('the client address', () => {
  const forwarded = (chain: string, i: number) => ({ authorization: guess(i), 'x-forwarded-for': chain });

  it.each([
    ['the proxies by address', ['127.0.0.1']],
    ['a hop count', 1],
  ] as const)(
    'TRUST_PROXY naming %s: the right-most untrusted address counts, whatever the client writes before it',
    async (_, trustProxy) => {
      const { baseUrl } = await start('sqlite', { authFailuresPerMinute: 3, trustProxy: trustProxy as never });
      // The client writes a new left-most address each time; the proxy (127.0.0.1) appended the real one.
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        statuses.push((await fetch(`${baseUrl}/v1/pets`, { headers: forwarded(`198.51.100.${i}, 203.0.113.7`, i) })).status);
      }
      expect(statuses).toEqual([401, 401, 401, 429, 429, 429]);
      // Another client (behind the same proxy) is not locked out by the first one's guesses.
      expect((await fetch(`${baseUrl}/v1/pets`, { headers: forwarded('203.0.113.7, 203.0.113.8', 9) })).status).toBe(401);
    },
  );

  it('behind one NAT: a key already used from the address goes on working while guesses lock the address out; a key not yet seen from it waits', async () => {
    const store = createApiKeyStore((await start('sqlite', { authFailuresPerMinute: 3, trustProxy: ['127.0.0.1'] })).database.prisma);
    const { baseUrl } = server!;
    const stored = (await store.create('behind-nat')).key;
    const nat = '198.51.100.77';
    const as = (authorization: string) => ({ authorization, 'x-forwarded-for': nat });
    // Two colleagues behind the NAT have used their keys (one bootstrap, one stored)...
    expect((await fetch(`${baseUrl}/v1/pets`, { headers: as(`Bearer ${API_KEY}`) })).status).toBe(200);
    expect((await fetch(`${baseUrl}/v1/pets`, { headers: as(`Bearer ${stored}`) })).status).toBe(200);
    // ...then a third machine behind it floods wrong keys: 3 checked, the rest refused unchecked.
    const guesses = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => (await fetch(`${baseUrl}/v1/pets`, { headers: as(guess(i)) })).status),
    );
    expect(guesses.filter((status) => status === 401)).toHaveLength(3);
    expect(guesses.filter((status) => status === 429)).toHaveLength(37);
    // The colleagues go on working, on both surfaces, while the address is locked out.
    for (const key of [API_KEY, stored]) {
      expect((await fetch(`${baseUrl}/v1/pets`, { headers: as(`Bearer ${key}`) })).status).toBe(200);
      expect((await fetch(`${baseUrl}/trpc/pets.list`, { headers: as(`Bearer ${key}`) })).status).toBe(200);
    }
    // A valid key never seen from this address waits like any other key from it.
    expect((await fetch(`${baseUrl}/v1/pets`, { headers: as('Bearer other-key-0123456789abcdef') })).status).toBe(429);
  });

  it("one proxy connection carries several clients: each request is decided by its own header and address, not the connection's last", async () => {
    const store = createApiKeyStore((await start('sqlite', { authFailuresPerMinute: 2, trustProxy: ['127.0.0.1'] })).database.prisma);
    const { baseUrl } = server!;
    const stored = (await store.create('through-a-proxy')).key;
    const from = (client: string, authorization: string) =>
      `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nX-Forwarded-For: ${client}\r\n\r\n`;
    const [a, b] = ['198.51.100.1', '198.51.100.2'];
    // The stored key proven from A; B locked out by guesses (each on a connection of its own).
    expect((await fetch(`${baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${stored}`, 'x-forwarded-for': a } })).status).toBe(200);
    for (let i = 0; i < 3; i++) await fetch(`${baseUrl}/v1/pets`, { headers: { ...forwarded(b, i) } });
    // One connection: the same header from A, then from B (never proven there: it waits), which ends it.
    expect(await pipeline(baseUrl, [from(a, `Bearer ${stored}`), from(a, `Bearer ${stored}`), from(b, `Bearer ${stored}`)])).toEqual([
      200, 200, 429,
    ]);
    // A client's own connection: a valid key, the same key written otherwise, then a wrong one.
    const direct = (authorization: string) => `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\n\r\n`;
    expect(
      await pipeline(baseUrl, [direct(`Bearer ${API_KEY}`), direct(`bearer  ${API_KEY}`), direct(`Bearer ${API_KEY.slice(0, -1)}x`)]),
    ).toEqual([200, 200, 401]);
  });

  it('without TRUST_PROXY, X-Forwarded-For is ignored: it cannot get anyone else locked out', async () => {
    const { baseUrl } = await start('sqlite', { authFailuresPerMinute: 2 });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await fetch(`${baseUrl}/v1/pets`, { headers: forwarded(`203.0.113.${i}`, i) })).status);
    expect(statuses).toEqual([401, 401, 429, 429]);
  });

  it('an IPv6 client is counted per /64', async () => {
    const { baseUrl } = await start('sqlite', { authFailuresPerMinute: 3, trustProxy: ['127.0.0.1'] });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      statuses.push((await fetch(`${baseUrl}/v1/pets`, { headers: forwarded(`2001:db8:1:2:${i}::${i + 1}`, i) })).status);
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    expect((await fetch(`${baseUrl}/v1/pets`, { headers: forwarded('2001:db8:1:3::1', 9) })).status).toBe(401);
  });

  it.each([
    ['the proxies by address', ['127.0.0.1']],
    ['a hop count', 1],
  ] as const)('TRUST_PROXY naming %s: one client written with ports and brackets is one client', async (_, trustProxy) => {
    const { baseUrl } = await start('sqlite', { authFailuresPerMinute: 3, trustProxy: trustProxy as never });
    const spellings = ['203.0.113.7:1111', '203.0.113.7', ' 203.0.113.7:2222', '[::ffff:203.0.113.7]:443', '::ffff:cb00:7107'];
    const statuses: number[] = [];
    for (const [i, entry] of spellings.entries()) {
      statuses.push((await fetch(`${baseUrl}/v1/pets`, { headers: forwarded(entry, i) })).status);
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    const v6 = ['[2001:db8:5::1]', '[2001:db8:5::2]:8080', '2001:db8:5:0:ffff::3', '[2001:0db8:0005::4]:1'];
    const v6Statuses: number[] = [];
    for (const [i, entry] of v6.entries()) v6Statuses.push((await fetch(`${baseUrl}/v1/pets`, { headers: forwarded(entry, i) })).status);
    expect(v6Statuses).toEqual([401, 401, 401, 429]);
  });

  it('an X-Forwarded-For entry that is not an IP address gets no budget of its own: it counts as the proxy, while real clients behind it go on', async () => {
    const { baseUrl } = await start('sqlite', { authFailuresPerMinute: 3, trustProxy: ['127.0.0.1'] });
    // A flood of wrong keys, each under a new string: 3 are checked, for the proxy's address; the
    // rest are refused unchecked, from the proxy itself too.
    const junk = (i: number) => [`client-${i}`, `203.0.113.${i}:x`, `[nope-${i}]`, `0x7f.0.0.${i}`, `127.${i}`, `999.1.1.${i}`][i % 6]!;
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) statuses.push((await fetch(`${baseUrl}/v1/pets`, { headers: forwarded(junk(i), i) })).status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(3);
    expect(statuses.slice(3)).toEqual(Array(57).fill(429));
    expect((await fetch(`${baseUrl}/v1/pets`, { headers: { authorization: guess(99) } })).status).toBe(429);
    // A legitimate client behind the proxy, with a real address: its key works, and wrong keys from it are its own.
    const legit = { authorization: `Bearer ${API_KEY}`, 'x-forwarded-for': '198.51.100.20' };
    expect((await fetch(`${baseUrl}/v1/pets`, { headers: legit })).status).toBe(200);
    expect((await fetch(`${baseUrl}/v1/pets`, { headers: forwarded('198.51.100.20', 1) })).status).toBe(401);
  });

  it.each([
    ['203.0.113.7:8080', '203.0.113.7'],
    ['[2001:db8::1]', '2001:db8::1'],
    ['[2001:DB8:0::1]:443', '2001:db8::1'],
    ['[::ffff:203.0.113.7]:1', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['not-an-address', null],
    ['127.1', null],
    ['0x7f.0.0.1', null],
    ['01.2.3.4', null],
    ['1.2.3.4:99999999', null],
    ['', null],
  ])('the entry %j reads as the address %s', (entry, address) => {
    expect(canonicalAddress(entry)).toBe(address);
  });

  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
  ])('%s is counted as %s', (address, key) => {
    expect(clientLimitKey(address)).toBe(key);
  });
});
