// src/http/connections.ts, writeAtTurnEnd: answers are handed on to be written at the end of the event-loop
// turn that produced them, together and in order. Every suite that talks to a real server runs
// through it too (the app's onSend hook); this file pins down the module's own promises.
import type { FastifyReply } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { writeAtTurnEnd } from '../../src/http/connections.js';

function fakeReply() {
  return { log: { error: vi.fn() }, raw: { destroy: vi.fn() } };
}

const endOfTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('writing answers at the end of the turn', () => {
  it('hands nothing on during the turn, then every answer of the turn, in the order given', async () => {
    const written: string[] = [];
    for (const payload of ['a', 'b', 'c']) {
      writeAtTurnEnd(fakeReply() as unknown as FastifyReply, payload, (error, value) => {
        expect(error).toBeNull();
        written.push(value as string);
      });
    }
    await Promise.resolve(); // microtasks of this turn: still nothing
    expect(written).toEqual([]);
    await endOfTurn();
    expect(written).toEqual(['a', 'b', 'c']);
  });

  it('an answer given while the last turn’s are written goes out at the end of the next turn', async () => {
    const written: string[] = [];
    writeAtTurnEnd(fakeReply() as unknown as FastifyReply, 'first', () => {
      written.push('first');
      writeAtTurnEnd(fakeReply() as unknown as FastifyReply, 'second', () => written.push('second'));
    });
    await endOfTurn();
    expect(written).toEqual(['first']);
    await endOfTurn();
    expect(written).toEqual(['first', 'second']);
  });

  it('an answer that cannot be written closes its own connection and holds back no other', async () => {
    const broken = fakeReply();
    const written: string[] = [];
    writeAtTurnEnd(fakeReply() as unknown as FastifyReply, 'before', () => written.push('before'));
    writeAtTurnEnd(broken as unknown as FastifyReply, 'broken', () => {
      throw new Error('cannot write');
    });
    writeAtTurnEnd(fakeReply() as unknown as FastifyReply, 'after', () => written.push('after'));
    await endOfTurn();
    expect(written).toEqual(['before', 'after']);
    expect(broken.raw.destroy).toHaveBeenCalledOnce();
    expect(broken.log.error).toHaveBeenCalledWith(expect.objectContaining({ err: expect.any(Error) }), 'could not write the response');
  });
});
