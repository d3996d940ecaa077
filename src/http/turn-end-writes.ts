// Responses are written at the end of the event-loop turn that produced them, together, instead
// of each one the moment it is ready (the "cork until the end of the loop iteration" of servers
// such as uWebSockets). Under load a turn answers many requests; written back to back, their
// clients are woken once for the lot instead of once per response: a write that wakes a sleeping
// reader on another CPU is costly on virtual machines (docs/benchmarks.md has the figure). Nothing
// waits longer than the rest of the current turn: an idle server answers at once.
//
// Used by the app's onSend hook (src/app.ts), so every answer Fastify sends, on both surfaces,
// errors included, goes through it; what Node or Fastify write on the socket themselves (a 400
// for a malformed request line, a 431) does not.
import type { FastifyReply } from 'fastify';

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
      reply.log.error({ err: error }, 'could not write the response');
      reply.raw.destroy();
    }
  }
}

/** Hands `payload` on to be written at the end of this event-loop turn (in the order given). */
export function writeAtTurnEnd(reply: FastifyReply, payload: unknown, write: PendingWrite['write']): void {
  if (pending.push({ reply, payload, write }) === 1) setImmediate(writeAll);
}
