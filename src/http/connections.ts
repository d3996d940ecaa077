// Bounds what connections cost (docs/security.md, "What a connection holds"):
// - `perAddress` open connections per peer address (the socket's: behind a proxy, the proxies') and
//   `total` in all. At the cap a newcomer takes the place of a crowding address's connection
//   (placeInCrowd), else of one idle longest (idleOfAddressAsLarge), else it is destroyed unanswered;
// - `maxInFlightPerConnection` requests of a connection in the app at once; the rest wait with the
//   connection paused, so TCP backpressure reaches a client that pipelines without reading;
// - an answer the peer takes nothing of for `sendTimeoutMs` ends its connection; over `maxUnsentBytes`
//   unsent in all, the connections whose answers moved least recently are closed;
// - crowded addresses share CROWD_REQUESTS_PER_TURN requests a turn, so others are not answered after
//   a flood (off when `perAddress` >= `total`: behind proxies one address stands for everyone).
// - answers are written together at the end of the event-loop turn that produced them (writeAtTurnEnd),
//   so their clients are woken once for the lot.
// Departures (our own 'request' listener; the pause kept against Node's; the turn-end writes; half-closed clients
// answered): docs/architecture.md.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply } from 'fastify';
import { logFailure } from './failure-log.js';

/** Requests of a connection in the app at once (browsers do not pipeline): each is held until its answer is in the kernel. */
export const MAX_IN_FLIGHT_PER_CONNECTION = 2;

/** Unsent answers of all connections together, in bytes; over it, the slowest connections are closed. */
export const MAX_UNSENT_BYTES = 64 * 1024 * 1024;

/** Connections of an address that a crowd's may make room for at the cap (browsers open up to 6 a host). */
const FEW_CONNECTIONS = 8;

/** Open connections past which an address is a crowd, whose requests share a budget per turn. */
const CROWDED_ADDRESS_CONNECTIONS = 256;

/** Requests of crowded addresses handed to the app per event-loop turn, all of them together. */
const CROWD_REQUESTS_PER_TURN = 2;

export interface ConnectionLimitSettings {
  total: number;
  perAddress: number;
  maxInFlightPerConnection: number;
  sendTimeoutMs: number;
  maxUnsentBytes: number;
}

/** What the limits did so far (for /metrics). */
export interface ConnectionCounts {
  open: number;
  refused: number;
  reclaimed: number;
  sendTimeouts: number;
  /** Closed because all connections' unsent answers were over `maxUnsentBytes`. */
  unsentReclaimed: number;
}

interface Tracked {
  address: string;
  /** Answers of requests handed to the app, until each is handed to the kernel ('close'). */
  inFlight: Set<ServerResponse>;
  /** Reading stopped here (requests are waiting), not by Node. */
  held: boolean;
  /** Requests parsed beyond the bounds, served in order as answers leave. */
  waiting: Array<[IncomingMessage, ServerResponse]>;
  /** Bytes the kernel had taken from the socket at the last sweep. */
  sent: number;
  /** When that last grew, or when the socket last had nothing to send. */
  movedAt: number;
}

/**
 * A client may half-close after its request and still wait for the answer (RFC 9112: a half-closed connection
 * delimits no request and does not say the client lost interest). Node's http.Server ends the connection at the
 * client's FIN, losing answers still being made; its undocumented `httpAllowHalfOpen`, read by its `socketOnEnd`,
 * makes it close after the last answer instead. Checked here, at start-up.
 */
export function answerHalfClosedClients(server: Server): void {
  const node = server as Server & { httpAllowHalfOpen?: unknown };
  if (typeof node.httpAllowHalfOpen !== 'boolean')
    throw new Error("Node's http.Server has no httpAllowHalfOpen any more: src/http/connections.ts relies on it");
  node.httpAllowHalfOpen = true;
}

export function limitConnections(server: Server, settings: ConnectionLimitSettings): () => ConnectionCounts {
  answerHalfClosedClients(server);
  const tracked = new Map<Socket, Tracked>();
  /** Idle connections, the longest idle first (a Set keeps insertion order). */
  const idle = new Set<Socket>();
  /** Each address's open connections, oldest first. */
  const byAddress = new Map<string, Set<Socket>>();
  const counts = { refused: 0, reclaimed: 0, sendTimeouts: 0, unsentReclaimed: 0 };
  const crowdedAt = settings.perAddress >= settings.total ? Infinity : CROWDED_ADDRESS_CONNECTIONS;
  /** What crowded addresses may still hand to the app in this turn. */
  let crowdBudget = CROWD_REQUESTS_PER_TURN;
  /** Connections of crowded addresses whose next request waits for a turn's budget, first come first. */
  const deferred = new Set<Socket>();
  let nextTurn: NodeJS.Immediate | undefined;

  function markIdle(socket: Socket): void {
    idle.delete(socket);
    idle.add(socket);
  }

  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    let sockets = byAddress.get(address);
    const fromAddress = sockets?.size ?? 0;
    if (fromAddress >= settings.perAddress) return refuse(socket);
    if (tracked.size >= settings.total) {
      const victim = (fromAddress < FEW_CONNECTIONS ? placeInCrowd(fromAddress + 1) : undefined) ?? idleOfAddressAsLarge(fromAddress + 1);
      if (victim === undefined) return refuse(socket);
      idle.delete(victim);
      counts.reclaimed++;
      victim.destroy();
    }
    if (!sockets) byAddress.set(address, (sockets = new Set()));
    sockets.add(socket);
    const state: Tracked = { address, inFlight: new Set(), held: false, waiting: [], sent: 0, movedAt: performance.now() };
    tracked.set(socket, state);
    markIdle(socket);
    // Node resumes a connection it paused once its queued answers are small; while requests wait
    // here it is paused again in the same tick (Node's listener runs first), before a byte is read.
    socket.on('resume', () => {
      if (state.held) socket.pause();
    });
    socket.on('drain', () => serveWaiting(socket, state));
    socket.once('close', () => {
      state.waiting.length = 0; // never served: no one is left to answer
      deferred.delete(socket);
      tracked.delete(socket);
      idle.delete(socket);
      sockets.delete(socket);
      if (sockets.size === 0) byAddress.delete(address);
    });
  });

  // Fastify's handler, called here instead, so that a connection's requests beyond the bounds wait.
  const handlers = server.listeners('request') as Array<(request: IncomingMessage, response: ServerResponse) => void>;
  server.removeAllListeners('request');

  /** Whether the connection's next request may be handed to the app now (which it then is). */
  function mayServe(socket: Socket, state: Tracked): boolean {
    if (state.inFlight.size >= settings.maxInFlightPerConnection || socket.writableNeedDrain) return false;
    if ((byAddress.get(state.address)?.size ?? 0) <= crowdedAt) return true;
    nextTurn ??= setImmediate(startTurn);
    if (crowdBudget > 0) {
      crowdBudget--;
      return true;
    }
    deferred.add(socket);
    return false;
  }

  /** A new turn's budget for the crowds, first for the connections that waited longest. */
  function startTurn(): void {
    nextTurn = undefined;
    crowdBudget = CROWD_REQUESTS_PER_TURN;
    for (const socket of deferred) {
      if (crowdBudget === 0) break;
      deferred.delete(socket);
      const state = tracked.get(socket);
      if (state) serveWaiting(socket, state);
    }
  }

  function dispatch(state: Tracked, socket: Socket, request: IncomingMessage, response: ServerResponse): void {
    state.inFlight.add(response);
    // 'close' comes once: `on`, not `once`, spares a wrapper and its removal per request.
    response.on('close', () => {
      state.inFlight.delete(response);
      serveWaiting(socket, state);
      if (state.inFlight.size === 0 && state.waiting.length === 0 && !socket.destroyed) markIdle(socket);
    });
    for (const handler of handlers) handler.call(server, request, response);
  }

  function serveWaiting(socket: Socket, state: Tracked): void {
    while (state.waiting.length > 0 && mayServe(socket, state)) {
      const [request, response] = state.waiting.shift()!;
      dispatch(state, socket, request, response);
    }
    if (state.held && state.waiting.length === 0) {
      state.held = false;
      socket.resume();
    }
  }

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    const state = tracked.get(socket);
    if (!state) {
      for (const handler of handlers) handler.call(server, request, response);
      return;
    }
    idle.delete(socket);
    if (state.waiting.length === 0 && mayServe(socket, state)) return dispatch(state, socket, request, response);
    // Nothing more is read from the connection (past the parser's current chunk) until these are served.
    state.waiting.push([request, response]);
    if (!state.held) {
      state.held = true;
      socket.pause();
    }
  });

  /** Answers handed to the app and finished, but not yet on the socket (behind an earlier one). */
  function queuedAnswerBytes(state: Tracked): number {
    let bytes = 0;
    for (const response of state.inFlight) if (response.socket === null) bytes += response.writableLength;
    return bytes;
  }

  // The send timeout and the bound on unsent output, checked a few times per timeout.
  function sweep(): void {
    const now = performance.now();
    let unsentTotal = 0;
    const sending: Array<{ socket: Socket; movedAt: number; unsent: number }> = [];
    for (const [socket, state] of tracked) {
      const pending = socket.writableLength;
      if (pending === 0) {
        state.movedAt = now;
      } else {
        // bytesWritten counts what is still buffered; less it, what the kernel has taken.
        const sent = socket.bytesWritten - pending;
        if (sent !== state.sent) {
          state.sent = sent;
          state.movedAt = now;
        } else if (now - state.movedAt >= settings.sendTimeoutMs) {
          counts.sendTimeouts++;
          socket.destroy();
          continue;
        }
      }
      const unsent = pending + queuedAnswerBytes(state);
      if (unsent > 0) {
        unsentTotal += unsent;
        sending.push({ socket, movedAt: state.movedAt, unsent });
      }
    }
    if (unsentTotal <= settings.maxUnsentBytes) return;
    sending.sort((a, b) => a.movedAt - b.movedAt);
    for (const { socket, unsent } of sending) {
      if (unsentTotal <= settings.maxUnsentBytes) break;
      unsentTotal -= unsent;
      counts.unsentReclaimed++;
      socket.destroy();
    }
  }
  const sweeps = setInterval(sweep, Math.max(100, Math.min(1_000, Math.floor(settings.sendTimeoutMs / 4))));
  sweeps.unref();
  server.once('close', () => clearInterval(sweeps));

  /** At the cap: of the address holding the most (over `than`), its oldest idle connection, else its stalest. */
  function placeInCrowd(than: number): Socket | undefined {
    let crowd: Set<Socket> | undefined;
    for (const sockets of byAddress.values()) if (sockets.size > (crowd?.size ?? than)) crowd = sockets;
    let stalest: Socket | undefined;
    let movedAt = Infinity;
    for (const socket of crowd ?? []) {
      if (idle.has(socket)) return socket;
      const state = tracked.get(socket)!;
      if (state.movedAt < movedAt) [stalest, movedAt] = [socket, state.movedAt];
    }
    return stalest;
  }

  /** The connection idle longest of an address holding at least `atLeast` connections. */
  function idleOfAddressAsLarge(atLeast: number): Socket | undefined {
    for (const socket of idle) if ((byAddress.get(tracked.get(socket)!.address)?.size ?? 0) >= atLeast) return socket;
    return undefined;
  }

  function refuse(socket: Socket): void {
    counts.refused++;
    socket.destroy();
  }

  return () => ({ open: tracked.size, ...counts });
}

// Every answer Fastify sends goes through writeAtTurnEnd (the app's onSend hook); nothing waits past the current turn.
interface PendingWrite {
  reply: FastifyReply;
  payload: unknown;
  /** Fastify's onSend `done`: hands the payload on to be written. */
  write: (error: Error | null, payload: unknown) => void;
}

let pending: PendingWrite[] = [];

function writeAll(): void {
  const ready = pending;
  pending = [];
  for (const { reply, payload, write } of ready) {
    try {
      write(null, payload);
    } catch (error) {
      // One answer that cannot be written must not hold back the others of its turn.
      logFailure(reply.log, 500, error, undefined, 'could not write the response');
      reply.raw.destroy();
    }
  }
}

/** Hands `payload` on to be written at the end of this event-loop turn (in the order given). */
export function writeAtTurnEnd(reply: FastifyReply, payload: unknown, write: PendingWrite['write']): void {
  if (pending.push({ reply, payload, write }) === 1) setImmediate(writeAll);
}
