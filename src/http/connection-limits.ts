// Connections are a bounded resource: each holds a file descriptor and buffers, and a client that
// opens thousands and stays silent would otherwise take every descriptor the process has, so that
// no one else can connect. Bounded here, on the server's 'connection' event, before a byte is read:
//
// - at most `perAddress` open connections per peer address (the socket's, not X-Forwarded-For:
//   behind a proxy the peers are the proxies, and the setting's default allows for it);
// - at most `total` open connections; at the cap, a new connection takes the place of the one idle
//   longest (a keep-alive connection between requests, or one that has sent nothing yet), and is
//   refused only when none is idle.
// A refused connection is destroyed at once: no answer is written, so refusing costs next to
// nothing. Requests in flight are never cut.
//
// Pipelining is bounded too: at most `maxInFlightPerConnection` requests of a connection are
// handed to the app at once; the next wait, and Node's parser stops reading the connection (as
// Node itself does when answers pile up unread), so that TCP backpressure reaches a client that
// pipelines without reading; it reads again as answers finish.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Requests of one connection handed to the app at once (browsers do not pipeline at all). */
export const MAX_IN_FLIGHT_PER_CONNECTION = 8;

export interface ConnectionLimitSettings {
  total: number;
  perAddress: number;
  maxInFlightPerConnection: number;
}

/** What the limits did so far (for /metrics). */
export interface ConnectionCounts {
  open: number;
  refused: number;
  reclaimed: number;
}

/** Node's own fields for pausing a connection's parser (node:_http_server), used the way Node uses them. */
interface HttpSocket extends Socket {
  _paused?: boolean;
  parser?: { pause(): void; resume(): void } | null;
}

interface Tracked {
  address: string;
  inFlight: number;
  /** Paused by us (too many requests in flight), not by Node. */
  held: boolean;
  /** Requests parsed beyond the bound, served in order as others finish. */
  waiting: Array<[IncomingMessage, ServerResponse]>;
}

export function limitConnections(server: Server, settings: ConnectionLimitSettings): () => ConnectionCounts {
  const tracked = new Map<Socket, Tracked>();
  /** Idle connections, the longest idle first (a Map keeps insertion order). */
  const idle = new Set<Socket>();
  const perAddress = new Map<string, number>();
  const counts = { refused: 0, reclaimed: 0 };

  function markIdle(socket: Socket): void {
    idle.delete(socket);
    idle.add(socket);
  }

  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const fromAddress = perAddress.get(address) ?? 0;
    if (fromAddress >= settings.perAddress) return refuse(socket);
    if (tracked.size >= settings.total) {
      const longestIdle = idle.values().next().value;
      if (longestIdle === undefined) return refuse(socket);
      idle.delete(longestIdle);
      counts.reclaimed++;
      longestIdle.destroy();
    }
    perAddress.set(address, fromAddress + 1);
    tracked.set(socket, { address, inFlight: 0, held: false, waiting: [] });
    markIdle(socket);
    socket.once('close', () => {
      const state = tracked.get(socket);
      if (state) state.waiting.length = 0; // never served: no one is left to answer
      tracked.delete(socket);
      idle.delete(socket);
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left === 0) perAddress.delete(address);
      else perAddress.set(address, left);
    });
  });

  // Fastify's handler, called here instead, so that a connection's requests beyond the bound wait.
  const handlers = server.listeners('request') as Array<(request: IncomingMessage, response: ServerResponse) => void>;
  server.removeAllListeners('request');

  function dispatch(state: Tracked, socket: HttpSocket, request: IncomingMessage, response: ServerResponse): void {
    state.inFlight++;
    response.once('close', () => {
      state.inFlight--;
      const next = state.waiting.shift();
      if (next) return dispatch(state, socket, next[0], next[1]);
      if (state.held) {
        state.held = false;
        socket._paused = false;
        socket.parser?.resume();
        socket.resume();
      }
      if (state.inFlight === 0 && !socket.destroyed) markIdle(socket);
    });
    for (const handler of handlers) handler.call(server, request, response);
  }

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket as HttpSocket;
    const state = tracked.get(socket);
    if (!state) {
      for (const handler of handlers) handler.call(server, request, response);
      return;
    }
    idle.delete(socket);
    if (state.inFlight < settings.maxInFlightPerConnection) return dispatch(state, socket, request, response);
    // Beyond the bound: parsed, but not served yet; the parser stops after the chunk it is reading
    // (as Node does for unread answers), so that TCP backpressure reaches the client.
    state.waiting.push([request, response]);
    if (!socket._paused) {
      state.held = true;
      socket._paused = true;
      socket.pause();
    }
  });

  function refuse(socket: Socket): void {
    counts.refused++;
    socket.destroy();
  }

  return () => ({ open: tracked.size, ...counts });
}
