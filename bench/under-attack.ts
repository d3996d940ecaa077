// The "under attack" scenario's attackers (bench/run.ts, BENCH_ONLY=attack): while they run, a
// legitimate client's latency and the server's RSS are measured, and compared with the same
// client unattacked. Four at once, on loopback:
//   - an idle-connection flood: connections from 20 other loopback addresses that each send one
//     GET /healthz and then stay silent (keep-alive);
//   - a keyless batch flood: 4 keep-alive connections sending 1,600-call tRPC batches without a key;
//   - one connection pipelining GET /v1/pets?limit=100 with a valid key, never reading an answer;
//   - slow readers of the largest docs asset: connections with a 2 KiB receive window, each
//     pipelining 8 GETs of the Swagger UI bundle, never reading (test/support/slow-readers.ts).
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { holdSlowReaders } from '../test/support/slow-readers.js';

export interface AttackSettings {
  port: number;
  apiKey: string;
  idleConnections: number;
  pipelinedRequests: number;
  slowReaders: number;
}

export interface Attack {
  /** Idle connections the server accepted and answered (still open when counted). */
  idleHeld(): number;
  /** Keyless batches answered so far. */
  batchesAnswered(): number;
  /** Slow readers that connected and sent their requests. */
  slowReadersConnected: number;
  stop(): Promise<void>;
}

const IDLE_ADDRESSES = 20;
const BATCH_WORKERS = 4;

function idleConnection(port: number, localAddress: string, sockets: Set<Socket>): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    socket.on('error', () => resolve());
    socket.on('close', () => {
      sockets.delete(socket);
      resolve();
    });
    socket.on('connect', () => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'));
    socket.once('data', () => {
      sockets.add(socket);
      resolve();
    });
  });
}

export async function startAttack(settings: AttackSettings): Promise<Attack> {
  const { port } = settings;
  // 1. Idle connections, opened a few hundred at a time.
  const idle = new Set<Socket>();
  const perAddress = Math.ceil(settings.idleConnections / IDLE_ADDRESSES);
  for (let a = 0; a < IDLE_ADDRESSES; a++) {
    await Promise.all(Array.from({ length: perAddress }, () => idleConnection(port, `127.0.0.${a + 2}`, idle)));
  }

  // 2. Keyless 1,600-call batches on keep-alive connections.
  let running = true;
  let batches = 0;
  const agent = new Agent({ keepAlive: true, maxSockets: BATCH_WORKERS });
  const path = `/trpc/${Array<string>(1_600).fill('pets.get').join(',')}?batch=1`;
  const batchOnce = () =>
    new Promise<void>((resolve) => {
      const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
        res.resume();
        res.on('end', () => {
          batches++;
          resolve();
        });
        res.on('error', () => resolve());
      });
      req.on('error', () => setTimeout(resolve, 10));
      req.end();
    });
  const workers = Array.from({ length: BATCH_WORKERS }, async () => {
    while (running) await batchOnce();
  });

  // 3. One connection that pipelines and never reads.
  const greedy = connect(port, '127.0.0.1');
  greedy.on('error', () => {});
  await new Promise<void>((resolve) => greedy.on('connect', resolve));
  greedy.pause();
  const one = `GET /v1/pets?limit=100 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${settings.apiKey}\r\n\r\n`;
  greedy.write(one.repeat(settings.pipelinedRequests));

  // 4. Slow readers of the largest docs asset.
  const slowReaders = await holdSlowReaders(port, settings.slowReaders, 8, '/v1/docs/assets/swagger-ui-bundle.js');

  return {
    idleHeld: () => idle.size,
    batchesAnswered: () => batches,
    slowReadersConnected: slowReaders.connected,
    async stop() {
      running = false;
      slowReaders.stop();
      await Promise.all(workers);
      agent.destroy();
      greedy.destroy();
      for (const socket of idle) socket.destroy();
    },
  };
}
