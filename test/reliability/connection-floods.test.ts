// Connections and pipelined requests are bounded resources (src/http/connections.ts):
// - a real service process whose open-file limit is 320 (prlimit), its caps derived from it, held
//   by 600 idle keep-alive connections from 12 other loopback addresses: a legitimate client on a
//   new connection each time is answered every time (the idlest connection makes room);
// - one connection pipelining 3,000 requests without reading, while the database makes every
//   query wait: at most 2 of them reach the app (and its database pool) at once; the rest wait
//   unread, and a legitimate client is answered as soon as the database is;
// - the database pool's wait queue is bounded (DATABASE_POOL_QUEUE_LIMIT): past it, 503 with
//   Retry-After at once, counted in the metrics, not a wait as long as the database's;
// - a mixed flood from one address (1,000 idle connections, 100 slow readers of the docs bundle, a
//   keyless batch flood that opens a connection per request): a client on another address has every
//   new connection answered and every kept-alive request too, and the kernel drops no connection at
//   the listen queue (src/http/acceptors.ts, the backlog in src/config.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { operatorNodeOptions } from '../support/operations-doc.js';
import { FROM_SOURCE, startServiceProcess } from '../support/service-process.js';
import { API_KEY, startTestServer } from '../support/test-server.js';
import { assertInNetworkNamespace, keptAliveClient, keylessBatchFlood, listenDrops, probeNewConnections } from '../support/floods.js';
import { holdSlowReaders, type HeldReaders } from '../support/slow-readers.js';

// Over an Ethernet-sized path, not the host's loopback: `npm run test:attack` (test/vitest.attack.config.ts).
assertInNetworkNamespace();

const KEY = 'flood-key-0123456789abcdef';
const dir = mkdtempSync(join(tmpdir(), 'animal-store-floods-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Opens `count` connections from `localAddress`, each sends one GET /healthz and stays silent; resolves with those answered and still open. */
async function holdIdle(port: number, localAddress: string, count: number): Promise<Socket[]> {
  const held = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Socket | null>((resolve) => {
          const socket = connect({ host: '127.0.0.1', port, localAddress });
          socket.on('error', () => resolve(null));
          socket.on('close', () => resolve(null));
          socket.on('connect', () => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'));
          socket.once('data', () => resolve(socket));
          socket.setTimeout(10_000, () => {
            socket.destroy();
            resolve(null);
          });
        }),
    ),
  );
  return held.filter((socket): socket is Socket => socket !== null);
}

/** One request on a new connection from 127.0.0.1; an error or 10 s without an answer rejects. */
function freshRequest(port: number, path: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, headers: { authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.end();
  });
}

describe('idle connections cannot take every file descriptor', () => {
  it('600 idle keep-alive connections from 12 addresses against 320 descriptors: a legitimate client is answered every time', async () => {
    const service = await startServiceProcess(
      { DATABASE_URL: `file:${join(dir, 'idle.db')}`, API_KEYS: KEY, NODE_ENV: 'production', LOG_LEVEL: 'info' },
      { command: ['prlimit', '--nofile=320:320', process.execPath, ...FROM_SOURCE.slice(1)] },
    );
    const sockets: Socket[] = [];
    try {
      const port = Number(new URL(service.baseUrl).port);
      for (let i = 2; i < 14; i++) sockets.push(...(await holdIdle(port, `127.0.0.${i}`, 50)));
      // The caps for 320 descriptors (src/config.ts): 182 in all (the pool, 64 listening sockets and
      // 64 more descriptors kept), 22 per address.
      expect(sockets.length).toBeGreaterThanOrEqual(150);
      expect(sockets.length).toBeLessThanOrEqual(12 * 22);
      for (let i = 0; i < 30; i++) expect(await freshRequest(port, '/v1/pets?limit=1', KEY)).toBe(200);
      // More from one address than its share: refused at the door, the others unaffected.
      const greedy = await holdIdle(port, '127.0.0.99', 60);
      sockets.push(...greedy);
      expect(greedy.length).toBeLessThanOrEqual(22);
      expect(await freshRequest(port, '/healthz', KEY)).toBe(200);
    } finally {
      for (const socket of sockets) socket.destroy();
      await service.stop();
    }
  }, 120_000);
});

describe('pipelining without reading is bounded per connection', () => {
  it('3,000 pipelined requests while every query waits: at most 2 reach the database; a legitimate client is answered once the database is', async () => {
    const server = await startTestServer({
      provider: 'postgresql',
      databaseSettings: {
        DATABASE_POOL_SIZE: '1',
        DATABASE_POOL_QUEUE_LIMIT: '100000',
        DATABASE_QUERY_TIMEOUT_MS: '60000',
        DATABASE_CONNECT_TIMEOUT_MS: '60000',
      },
    });
    const locker = new pg.Client({ connectionString: server.databaseUrl });
    await locker.connect();
    const port = Number(new URL(server.baseUrl).port);
    const greedy = connect(port, '127.0.0.1');
    greedy.on('error', () => {});
    const connected = new Promise<void>((resolve) => greedy.on('connect', resolve));
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE pets IN ACCESS EXCLUSIVE MODE');
      const one = `GET /v1/pets?limit=100 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${API_KEY}\r\n\r\n`;
      const statements = vi.spyOn(server.database.sql, 'query');
      await connected;
      greedy.write(one.repeat(3_000));
      greedy.pause(); // never reads
      // Its first two requests send their statements (both wait for the lock); no more, pooled or pipelined.
      await vi.waitFor(() => expect(statements).toHaveBeenCalledTimes(2), { timeout: 10_000, interval: 50 });
      for (let i = 0; i < 10; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const stats = server.database.poolStats()!;
        expect(stats.waiting + (stats.total - stats.idle)).toBeLessThanOrEqual(2);
        expect(statements).toHaveBeenCalledTimes(2);
      }
      await locker.query('ROLLBACK');
      for (let i = 0; i < 20; i++) expect(await freshRequest(port, '/v1/pets?limit=1', API_KEY)).toBe(200);
    } finally {
      greedy.destroy();
      await locker.query('ROLLBACK').catch(() => {});
      await locker.end();
      await server.close();
    }
  }, 120_000);
});

describe('the database pool’s wait queue is bounded', () => {
  it('40 requests while every query waits, pool 2, queue 10: 28 answered 503 with Retry-After at once; the rest served once the database is', async () => {
    const server = await startTestServer({
      provider: 'postgresql',
      databaseSettings: {
        DATABASE_POOL_SIZE: '2',
        DATABASE_POOL_QUEUE_LIMIT: '10',
        DATABASE_QUERY_TIMEOUT_MS: '60000',
        DATABASE_CONNECT_TIMEOUT_MS: '60000',
      },
    });
    const locker = new pg.Client({ connectionString: server.databaseUrl });
    await locker.connect();
    const port = Number(new URL(server.baseUrl).port);
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE pets IN ACCESS EXCLUSIVE MODE');
      const answers: Array<Promise<{ status: number; retryAfter: string | undefined }>> = [];
      for (let i = 0; i < 40; i++) {
        answers.push(
          new Promise((resolve, reject) => {
            const req = request(
              { host: '127.0.0.1', port, path: '/v1/pets?limit=1', agent: false, headers: { authorization: `Bearer ${API_KEY}` } },
              (res) => {
                res.resume();
                res.on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'] }));
              },
            );
            req.on('error', reject);
            req.end();
          }),
        );
      }
      // While the lock is still held (queries would wait up to 60 s): the 28 beyond the queue are answered.
      const refused = await vi.waitFor(
        async () => {
          const settled = await Promise.all(answers.map((answer) => Promise.race([answer, Promise.resolve(null)])));
          const done = settled.filter((answer) => answer !== null);
          expect(done).toHaveLength(28);
          return done;
        },
        { timeout: 10_000, interval: 50 },
      );
      expect(refused.every((answer) => answer.status === 503 && answer.retryAfter === '2')).toBe(true);
      expect(server.database.poolStats()!.queueFull).toBe(28);
      await locker.query('ROLLBACK');
      expect((await Promise.all(answers)).filter((answer) => answer.status === 200)).toHaveLength(12);
      const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
      expect(metrics).toMatch(/^animal_store_db_pool_queue_full_total 28$/m);
      for (let i = 0; i < 10; i++) expect(await freshRequest(port, '/v1/pets?limit=1', API_KEY)).toBe(200);
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      await locker.end();
      await server.close();
    }
  }, 120_000);
});

describe('a mixed flood from one address', () => {
  it('1,000 idle connections, 100 slow readers and a keyless batch flood from 127.0.0.1: every new connection from 127.0.0.2 is answered, and the kernel drops none at the listen queue', async () => {
    const service = await startServiceProcess(
      {
        DATABASE_URL: `file:${join(dir, 'mix.db')}`,
        API_KEYS: KEY,
        NODE_ENV: 'production',
        LOG_LEVEL: 'info',
        NODE_OPTIONS: operatorNodeOptions(),
        // The flood comes from one address standing for many: admitted, not refused at the door
        // (under these NODE_OPTIONS the default cap is 1,280: src/config.ts).
        MAX_CONNECTIONS: '3000',
        MAX_CONNECTIONS_PER_ADDRESS: '2000',
        // The client's kept-alive requests go as fast as they are answered: no per-key budget.
        RATE_LIMIT_PER_MINUTE: '0',
      },
      { command: ['prlimit', '--nofile=4096:4096', process.execPath, ...FROM_SOURCE.slice(1)] },
    );
    const port = Number(new URL(service.baseUrl).port);
    const client = { from: '127.0.0.2', path: '/v1/pets?limit=1', headers: { authorization: `Bearer ${KEY}` }, timeoutMs: 60_000 };
    const held: HeldReaders[] = [];
    const flood = keylessBatchFlood(port, 16, 50);
    try {
      const dropsBefore = listenDrops();
      // From the flood's first connection on: its burst lands in the listen queue ahead of the client's.
      const fresh = probeNewConnections(port, { ...client, everyMs: 100, seconds: 10 });
      const kept = keptAliveClient(port, { ...client, connections: 2, seconds: 10 });
      held.push(await holdSlowReaders(port, 1_000, 1, '/healthz'));
      held.push(await holdSlowReaders(port, 100, 8, '/v1/docs/assets/swagger-ui-bundle.js'));
      const [probes, answers] = await Promise.all([fresh, kept]);
      const dropsAfter = listenDrops();
      expect(held.map((h) => h.connected)).toEqual([1_000, 100]);
      expect(flood.answered()).toBeGreaterThan(0);
      expect(probes.length).toBeGreaterThan(50);
      expect(probes.filter((probe) => !('status' in probe) || probe.status !== 200)).toEqual([]);
      expect(answers.filter((answer) => !('status' in answer) || answer.status !== 200)).toEqual([]);
      expect(dropsAfter.overflows - dropsBefore.overflows).toBe(0);
      expect(dropsAfter.drops - dropsBefore.drops).toBe(0);
    } finally {
      await flood.stop();
      for (const readers of held) readers.stop();
      await service.stop();
    }
  }, 120_000);
});
