// A connection flood and the legitimate client beside it, on real sockets, for the attack suites
// (test/reliability/connection-floods.test.ts) and the bench's "under attack" scenario
// (bench/under-attack.ts): a keyless batch flood, the client's new connections (timed from
// connect() to the last byte of their answer) and kept-alive requests from another address, and the
// kernel's count of connections its listen queues dropped (idle connections and slow readers:
// test/support/slow-readers.ts). Both run inside a network namespace of
// their own (scripts/in-network-namespace.sh), where 127.0.0.2… are this namespace's addresses
// and the kernel's counters are the namespace's alone.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';

/** Fails unless this process is inside a network namespace whose loopback has an Ethernet's MTU. */
export function assertInNetworkNamespace(): void {
  // /sys shows the host's loopback; the MTU of this namespace's is in the kernel's reply to `ip`.
  const inside = process.env.ANIMAL_STORE_NETWORK_NAMESPACE === 'mtu1500';
  if (!inside) {
    throw new Error(
      'the attack suites run inside a network namespace whose loopback has MTU 1500: `npm run test:attack` ' +
        '(scripts/in-network-namespace.sh; root and unshare are needed)',
    );
  }
}

/** The kernel's counts of connections dropped at a full listen queue (this network namespace's). */
export function listenDrops(): { overflows: number; drops: number } {
  const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n');
  const names = lines.find((line) => line.startsWith('TcpExt:'))!.split(' ');
  const values = lines.filter((line) => line.startsWith('TcpExt:'))[1]!.split(' ');
  const value = (name: string) => Number(values[names.indexOf(name)]);
  return { overflows: value('ListenOverflows'), drops: value('ListenDrops') };
}

export interface BatchFlood {
  answered(): number;
  stop(): Promise<void>;
}

/**
 * `connections` connections from 127.0.0.1, each POSTing a keyless tRPC batch of `calls` creates as
 * soon as the last was answered: its 401 comes before the body is read and closes the connection
 * (docs/security.md), so every request is a new connection.
 */
export function keylessBatchFlood(port: number, connections: number, calls: number): BatchFlood {
  let running = true;
  let answered = 0;
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const names = Array.from({ length: calls }, () => 'pets.create');
  const path = `/trpc/${names.join(',')}?batch=1`;
  const body = JSON.stringify(Object.fromEntries(names.map((_, i) => [i, { name: 'flood', categoryId: 1 }])));
  const once = () =>
    new Promise<void>((resolve) => {
      const req = request(
        { host: '127.0.0.1', port, path, agent, method: 'POST', headers: { 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          res.on('end', () => {
            answered++;
            resolve();
          });
          res.on('error', () => resolve());
        },
      );
      req.on('error', () => setTimeout(resolve, 10));
      req.end(body);
    });
  const workers = Array.from({ length: connections }, async () => {
    while (running) await once();
  });
  return {
    answered: () => answered,
    async stop() {
      running = false;
      await Promise.all(workers);
      agent.destroy();
    },
  };
}

/** One answer to the legitimate client: how long it took (ms), or why it failed. */
export type Timed = { ms: number; status: number } | { ms: number; error: string };

/** GET `path` on a new connection from `from`: the time from connect() to the answer's last byte. */
function timedNewConnection(port: number, from: string, path: string, headers: Record<string, string>, timeoutMs: number): Promise<Timed> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, localAddress: from, path, headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ ms: performance.now() - started, status: res.statusCode! }));
      res.on('error', (error) => resolve({ ms: performance.now() - started, error: error.message }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ ms: performance.now() - started, error: error.code ?? error.message }));
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    req.end();
  });
}

/**
 * The legitimate client's new connections: one opened every `everyMs` for `seconds` (each on its
 * own, whatever the others wait for), in the order they were opened.
 */
export async function probeNewConnections(
  port: number,
  options: { from: string; path: string; headers: Record<string, string>; everyMs: number; seconds: number; timeoutMs: number },
): Promise<Timed[]> {
  const probes: Array<Promise<Timed>> = [];
  const until = performance.now() + options.seconds * 1000;
  while (performance.now() < until) {
    probes.push(timedNewConnection(port, options.from, options.path, options.headers, options.timeoutMs));
    await new Promise((resolve) => setTimeout(resolve, options.everyMs));
  }
  return Promise.all(probes);
}

/**
 * The legitimate client's kept-alive requests: `connections` keep-alive connections from `from`,
 * each sending GET `path` as soon as its last answer came, for `seconds`.
 */
export async function keptAliveClient(
  port: number,
  options: { from: string; path: string; headers: Record<string, string>; connections: number; seconds: number; timeoutMs: number },
): Promise<Timed[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections, localAddress: options.from });
  const answers: Timed[] = [];
  const until = performance.now() + options.seconds * 1000;
  const once = () =>
    new Promise<Timed>((resolve) => {
      const started = performance.now();
      const req = request({ host: '127.0.0.1', port, path: options.path, headers: options.headers, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve({ ms: performance.now() - started, status: res.statusCode! }));
        res.on('error', (error) => resolve({ ms: performance.now() - started, error: error.message }));
      });
      req.on('error', (error: NodeJS.ErrnoException) => resolve({ ms: performance.now() - started, error: error.code ?? error.message }));
      req.setTimeout(options.timeoutMs, () => req.destroy(new Error(`no answer in ${options.timeoutMs} ms`)));
      req.end();
    });
  await Promise.all(
    Array.from({ length: options.connections }, async () => {
      while (performance.now() < until) answers.push(await once());
    }),
  );
  agent.destroy();
  return answers;
}

/** The `p`-th percentile (0–100) of the times, nearest rank. */
export function percentile(times: number[], p: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}
