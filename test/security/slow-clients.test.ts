// Slow clients: hundreds of connections that trickle their headers or their body, with
// and without a key, cannot hold the service. A request without a valid key gets its 401 before
// its body is read, and its connection is closed at once; a body or headers that do not arrive
// within the timeouts get 408 and the connection is closed; meanwhile a normal client is served.
// A connection left idle (after an answer, or silent from the start) is closed after IDLE_TIMEOUT_MS.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startTestServer, type TestServer } from '../support/test-server.js';
import { assertInNetworkNamespace } from '../support/floods.js';

// Over an Ethernet-sized path, not the host's loopback: `npm run test:attack` (test/vitest.attack.config.ts).
assertInNetworkNamespace();

const REQUEST_TIMEOUT_MS = 6_000;
const HEADERS_TIMEOUT_MS = 3_000;
/** Node looks for late requests every HEADERS_TIMEOUT_MS / 4 here; plus a shared machine's delays. */
const SLACK_MS = 4_000;
const PER_KIND = 100;
const TRICKLE_EVERY_MS = 250;

let server: TestServer;
let port: number;
beforeAll(async () => {
  server = await startTestServer({
    config: { requestTimeoutMs: REQUEST_TIMEOUT_MS, headersTimeoutMs: HEADERS_TIMEOUT_MS, idleTimeoutMs: 10_000 },
  });
  port = Number(new URL(server.baseUrl).port);
});
afterAll(() => server.close());

interface Held {
  /** The status of the answer, if any came. */
  status: number | null;
  /** When the server closed the connection, from the first byte sent. */
  closedAfterMs: number;
}

/**
 * A connection that sends `head` at once, then one more byte of `drip` every TRICKLE_EVERY_MS for
 * as long as the server keeps it open (a body announced as 60 kB, or header lines that never end).
 */
function hold(head: string, drip: string): Promise<Held> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect(port, '127.0.0.1');
    let received = '';
    let timer: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      socket.write(head);
      timer = setInterval(() => socket.writable && socket.write(drip), TRICKLE_EVERY_MS);
    });
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', () => {}); // a reset is a close too
    socket.on('close', () => {
      clearInterval(timer);
      const status = /^HTTP\/1\.1 (\d{3})/.exec(received);
      resolve({ status: status ? Number(status[1]) : null, closedAfterMs: performance.now() - started });
    });
    // The test's own bound: a connection still open after this counts as held for ever.
    setTimeout(() => socket.destroy(), REQUEST_TIMEOUT_MS * 4).unref();
  });
}

const bodyHead = (authorization: string) =>
  `POST /v1/pets HTTP/1.1\r\nHost: localhost\r\n${authorization}Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n{"name":"`;

// Both groups wait on the service's timers, not on the CPU: their tests run side by side (each
// bound is measured from its own connection's first byte).
describe.concurrent('slow clients', () => {
  it('cannot hold the service: trickled bodies and headers are cut off in time while others are served', { timeout: 60_000 }, async () => {
    const held = {
      withoutKey: Array.from({ length: PER_KIND }, () => hold(bodyHead(''), 'a')),
      wrongKey: Array.from({ length: PER_KIND / 2 }, () => hold(bodyHead('Authorization: Bearer not-a-valid-key-000000\r\n'), 'a')),
      withKey: Array.from({ length: PER_KIND }, () => hold(bodyHead(`Authorization: Bearer ${API_KEY}\r\n`), 'a')),
      trpcWithoutKey: Array.from({ length: PER_KIND / 2 }, () =>
        hold('POST /trpc/pets.create HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{', 'a'),
      ),
      slowHeaders: Array.from({ length: PER_KIND }, () => hold('GET /v1/pets HTTP/1.1\r\nHost: localhost\r\n', 'x')),
    };

    // A normal client, meanwhile: every request answered.
    const served: number[] = [];
    const until = performance.now() + REQUEST_TIMEOUT_MS + 1_000;
    while (performance.now() < until) {
      const response = await server.request('/v1/pets?limit=1', { signal: AbortSignal.timeout(5_000) });
      served.push(response.status);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(served.length).toBeGreaterThan(5);
    expect(served.every((status) => status === 200)).toBe(true);

    // Without a valid key: the 401 comes before the body, and the connection closes at once,
    // long before any timeout (the rest of the body is never read).
    for (const connection of await Promise.all([...held.withoutKey, ...held.wrongKey, ...held.trpcWithoutKey])) {
      expect(connection.status).toBe(401);
      expect(connection.closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_MS);
    }
    // With a key, a body that does not arrive in time: 408, and closed.
    for (const connection of await Promise.all(held.withKey)) {
      expect(connection.status).toBe(408);
      expect(connection.closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
    }
    // Headers that do not arrive in time: 408 (not 400), and closed.
    for (const connection of await Promise.all(held.slowHeaders)) {
      expect(connection.status).toBe(408);
      expect(connection.closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS);
    }
  });

  it('answers a request that times out with the error envelope', { timeout: 20_000 }, async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('GET /v1/pets HTTP/1.1\r\nHost: localhost\r\n'));
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString()));
      socket.on('close', () => resolve(received));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      code: 'TIMEOUT',
      message: expect.stringMatching(/did not arrive in time/),
      status: 408,
    });
  });
});

// Idle connections (IDLE_TIMEOUT_MS, Fastify's connectionTimeout and keepAliveTimeout): a server of
// its own with a short idle timeout and header/request timeouts far beyond this test, so that only
// the idle timeout can close these connections.
describe.concurrent('idle connections', () => {
  const IDLE_TIMEOUT_MS = 1_500;
  /** Node's socket timers are exact to a few ms; this is the shared machine's delays. */
  const IDLE_SLACK_MS = 2_000;
  let idleServer: TestServer;
  let idlePort: number;
  beforeAll(async () => {
    idleServer = await startTestServer({
      config: { requestTimeoutMs: 120_000, headersTimeoutMs: 60_000, idleTimeoutMs: IDLE_TIMEOUT_MS },
    });
    idlePort = Number(new URL(idleServer.baseUrl).port);
  });
  afterAll(() => idleServer.close());

  const listRequest = `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${API_KEY}\r\n\r\n`;

  /**
   * A connection that sends each of `requests` (waiting for its complete answer, then `pauseMs`),
   * then stays silent. Resolves with the answers' statuses and when the server closed it, from the
   * moment it went silent (after the last answer, or after connecting when there is no request).
   */
  function idle(requests: number, pauseMs: number): Promise<{ statuses: number[]; closedAfterSilenceMs: number }> {
    return new Promise((resolve, reject) => {
      const socket = connect(idlePort, '127.0.0.1');
      const statuses: number[] = [];
      let received = '';
      let silentSince = 0;
      const sendNext = () => {
        if (statuses.length < requests) socket.write(listRequest);
        else silentSince = performance.now();
      };
      socket.on('connect', sendNext);
      socket.on('data', (chunk) => {
        received += chunk.toString('latin1');
        // One complete answer: its head, and as many body bytes as Content-Length says.
        const headEnd = received.indexOf('\r\n\r\n');
        const length = /\r\ncontent-length: (\d+)\r\n/i.exec(received.slice(0, headEnd + 2));
        if (headEnd < 0 || !length || received.length < headEnd + 4 + Number(length[1])) return;
        statuses.push(Number(/^HTTP\/1\.1 (\d{3})/.exec(received)![1]));
        received = received.slice(headEnd + 4 + Number(length[1]));
        setTimeout(sendNext, statuses.length < requests ? pauseMs : 0);
      });
      socket.on('error', () => {}); // a reset is a close too
      socket.on('close', () => {
        if (silentSince === 0) reject(new Error(`closed while busy, after ${statuses.length} answers`));
        else resolve({ statuses, closedAfterSilenceMs: performance.now() - silentSince });
      });
      // The test's own bound: a connection still open after this was never closed by the server.
      setTimeout(() => socket.destroy(), IDLE_TIMEOUT_MS * 10).unref();
    });
  }

  it(
    'closes a keep-alive connection left idle after an answer, and one left silent, within the timeout; a busy one stays open',
    { timeout: 30_000 },
    async () => {
      const [afterAnswer, silent, busy] = await Promise.all([
        idle(1, 0),
        idle(0, 0),
        // A request every third of the timeout, for four timeouts: never idle long enough.
        idle(12, IDLE_TIMEOUT_MS / 3),
      ]);
      expect(afterAnswer.statuses).toEqual([200]);
      expect(afterAnswer.closedAfterSilenceMs).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS - 100);
      expect(afterAnswer.closedAfterSilenceMs).toBeLessThan(IDLE_TIMEOUT_MS + IDLE_SLACK_MS);
      expect(silent.statuses).toEqual([]);
      expect(silent.closedAfterSilenceMs).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS - 100);
      expect(silent.closedAfterSilenceMs).toBeLessThan(IDLE_TIMEOUT_MS + IDLE_SLACK_MS);
      // The busy client was answered every time on its one connection, which closed only once idle.
      expect(busy.statuses).toEqual(Array(12).fill(200));
      expect(busy.closedAfterSilenceMs).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS - 100);
    },
  );
});
