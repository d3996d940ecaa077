// libuv accepts one connection per listening socket per event-loop turn, so a burst drains slowly.
// The service listens on several SO_REUSEPORT sockets (how many: src/config.ts, listenSockets), each
// handing its connections to the one HTTP server ('connection'), whose settings and limits apply.
// A departure: docs/architecture.md ("departures").
import type { Server as HttpServer } from 'node:http';
import { Server, type AddressInfo } from 'node:net';

/** Binds `port` once without SO_REUSEPORT: fails where anything listens, even an instance the acceptors would join unnoticed. */
export async function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = new Server();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port }, () => probe.close(() => resolve()));
  });
}

/**
 * Adds `count` - 1 `reusePort` sockets beside `server`'s own. What it returns stops them and waits for their
 * connections to close, which the HTTP server's own close does not.
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
