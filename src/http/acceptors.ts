// How fast new connections are taken off the listen queue. Node's libuv accepts ONE connection per
// event-loop turn (libuv 1.45, "unix: don't accept() connections in a loop"), so a burst of
// thousands of connections drains at one per turn while the other sockets' work makes each turn
// take milliseconds: a client arriving behind the burst waited seconds, or had its SYN dropped by a
// full queue and retried after 1 s, then 3 s (docs/operations.md, "Connections"). So the
// service listens on several sockets bound to the same address with SO_REUSEPORT (Node's
// `reusePort`; how many: src/config.ts, listenSockets): the kernel spreads new connections over their
// queues, and each turn takes one from each. Every connection is handed to the one HTTP server (its documented 'connection' event), so
// its settings, timeouts and src/http/connection-limits.ts apply as to any other.
import type { Server as HttpServer } from 'node:http';
import { Server, type AddressInfo } from 'node:net';

/**
 * Takes `port` once without SO_REUSEPORT and lets it go: fails (EADDRINUSE) where anything listens
 * on it, another instance of this service too, which the shared listen of the acceptors would
 * otherwise join unnoticed. Port 0 needs no check (a free port is picked).
 */
export async function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = new Server();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port }, () => probe.close(() => resolve()));
  });
}

/**
 * Adds `count` - 1 listening sockets beside `server`'s own, which must be listening with
 * `reusePort`, on its address and with its `backlog`. Returns what stops them listening, which
 * resolves once every connection they accepted has closed: the HTTP server counts only the
 * connections it accepted itself, so its own close does not wait for these.
 */
export async function addAcceptors(server: HttpServer, count: number, backlog: number): Promise<() => Promise<void>> {
  const { address, port } = server.address() as AddressInfo;
  const acceptors = await Promise.all(
    Array.from({ length: count - 1 }, async () => {
      // What node:http's own server is to its sockets: half-open allowed, Nagle off.
      const acceptor = new Server({ allowHalfOpen: true, noDelay: true });
      acceptor.on('connection', (socket) => server.emit('connection', socket));
      await new Promise<void>((resolve, reject) => {
        acceptor.once('error', reject);
        acceptor.listen({ host: address, port, backlog, reusePort: true }, () => {
          acceptor.off('error', reject);
          resolve();
        });
      });
      return acceptor;
    }),
  );
  return () =>
    Promise.all(acceptors.map((acceptor) => new Promise<void>((resolve) => acceptor.close(() => resolve())))).then(() => undefined);
}
