// Reading what the operator is told when a dependency goes away (src/observability/dependencies.ts):
// a logger at debug level as the service makes it, every line it wrote, and the dependency's
// metrics. Used by test/reliability/dependency-logs.test.ts and test/pgbouncer/dependency-logs.test.ts.
import { Writable } from 'node:stream';
import { expect, vi } from 'vitest';
import { createLogger } from '../../src/logger.js';

export interface Entry {
  level: number;
  msg: string;
  [field: string]: unknown;
}

export const INFO = 30;
export const WARN = 40;
/** What a driver's stack or Prisma's invocation text looks like in a line. */
export const STACK_OR_DRIVER_TEXT = /"stack"|\\n\s+at |Invalid `prisma|Stream isn't writeable/;

/** A logger at debug level, as the service makes it (src/logger.ts), and every line it wrote. */
export function capturedLogger() {
  const text: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text.push(chunk.toString());
      done();
    },
  });
  const logger = createLogger({ logLevel: 'debug' }, stream);
  const entries = (): Entry[] =>
    text
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Entry);
  return { logger, text, entries };
}

/** The lines at info level and above: what an operator running at the default LOG_LEVEL reads. */
export function atInfo(entries: Entry[]): Entry[] {
  return entries.filter((entry) => entry.level >= INFO);
}

/**
 * animal_store_dependency_up and _failed_requests_total for one dependency, from /metrics (rendered
 * at most once a second: src/http/metrics-plugin.ts) as `metrics()` returns it, once they are `expected`.
 */
export async function expectMetric(
  metrics: string | (() => Promise<string>),
  dependency: string,
  expected: { up: number; failed: number },
): Promise<void> {
  const read = typeof metrics === 'string' ? async () => (await fetch(`${metrics}/metrics`)).text() : metrics;
  await vi.waitFor(
    async () => {
      const text = await read();
      const value = (name: string) => Number(new RegExp(`^${name}\\{dependency="${dependency}"\\} (\\S+)$`, 'm').exec(text)?.[1]);
      expect({ up: value('animal_store_dependency_up'), failed: value('animal_store_dependency_failed_requests_total') }).toEqual(expected);
    },
    { timeout: 5_000, interval: 250 },
  );
}
