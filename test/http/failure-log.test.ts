// The one logger of failed requests (src/http/failure-log.ts), which both surfaces and every error
// handler call: a 503 is a warning with its cause, any other 5xx an error, a 4xx nothing.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { logFailure } from '../../src/http/failure-log.js';

function capture() {
  const lines: Array<{ level: number; msg: string; err?: { message: string } }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as (typeof lines)[number]);
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}

describe('logFailure', () => {
  it('a 503 is a warning naming its cause; a 500 an error; a 4xx is not logged', async () => {
    const { log, lines } = capture();
    logFailure(log, 503, Object.assign(new Error('wrapped'), { cause: new Error('connect ECONNREFUSED') }));
    logFailure(log, 500, new Error('a bug'));
    logFailure(log, 429, new Error('refused'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map(({ level, err }) => ({ level, cause: err?.message }))).toEqual([
      { level: 40, cause: 'connect ECONNREFUSED' },
      { level: 50, cause: 'a bug' },
    ]);
  });
});
