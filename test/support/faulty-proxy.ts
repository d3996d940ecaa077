// An HTTP proxy in front of a test server that fails on command, as a network or a load balancer
// would: it can cut a client's connection after forwarding the request and receiving the server's
// answer, without relaying it (the request took effect, the client never learns), or answer in the
// server's place. Otherwise it forwards every request and relays every answer as they are.
import { createServer, request as forward, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

interface SeenRequest {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  /** When it arrived (performance.now()). */
  at: number;
  /** What the proxy did instead of relaying the server's answer. */
  fault?: 'answer dropped' | 'answered instead';
}

type Match = (request: IncomingMessage) => boolean;

interface CannedAnswer {
  status: number;
  headers: Record<string, string>;
  /** The body, from the request (e.g. one tRPC error per call of a batch). */
  body: (request: IncomingMessage) => unknown;
}

export interface FaultyProxy {
  baseUrl: string;
  /** Every request received, in order. */
  seen: SeenRequest[];
  /** The next request that matches is forwarded and answered by the server; its answer is dropped and the client's connection cut. */
  dropAnswerOnce(when: Match): void;
  /** The next `times` requests that match are answered by the proxy and never reach the server. */
  answerInstead(when: Match, answer: CannedAnswer, times?: number): void;
  /** Forgets what it has seen and the faults not yet used. */
  reset(): void;
  close(): Promise<void>;
}

export async function startFaultyProxy(targetBaseUrl: string): Promise<FaultyProxy> {
  const target = new URL(targetBaseUrl);
  const seen: SeenRequest[] = [];
  const drops: Match[] = [];
  const canned: Array<{ when: Match; answer: CannedAnswer; left: number }> = [];
  const sockets = new Set<Socket>();

  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const entry: SeenRequest = {
      method: request.method ?? '',
      path: request.url ?? '',
      idempotencyKey: request.headers['idempotency-key'] as string | undefined,
      at: performance.now(),
    };
    seen.push(entry);

    const instead = canned.find((candidate) => candidate.left > 0 && candidate.when(request));
    if (instead) {
      instead.left -= 1;
      entry.fault = 'answered instead';
      request.resume();
      response.writeHead(instead.answer.status, { 'content-type': 'application/json', ...instead.answer.headers });
      response.end(JSON.stringify(instead.answer.body(request)));
      return;
    }

    const dropIndex = drops.findIndex((when) => when(request));
    const drop = dropIndex >= 0;
    if (drop) {
      drops.splice(dropIndex, 1);
      entry.fault = 'answer dropped';
    }
    const upstream = forward(
      { host: target.hostname, port: target.port, method: request.method, path: request.url, headers: request.headers },
      (answer) => {
        if (drop) {
          // The server has answered (the create is committed): read its answer, relay nothing.
          answer.resume();
          answer.on('end', () => request.socket.destroy());
          return;
        }
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', () => request.socket.destroy());
    request.pipe(upstream);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    dropAnswerOnce: (when) => void drops.push(when),
    answerInstead: (when, answer, times = 1) => void canned.push({ when, answer, left: times }),
    reset() {
      seen.splice(0);
      drops.splice(0);
      canned.splice(0);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
