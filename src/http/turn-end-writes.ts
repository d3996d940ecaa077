// Answers are written together at the end of the event-loop turn that produced them, so their
// clients are woken once for the lot; nothing waits past the current turn. Every answer Fastify sends
// goes through it (the app's onSend hook). A departure: docs/architecture.md ("departures").
import type { FastifyReply } from 'fastify';
import { logFailure } from './failure-log.js';

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
