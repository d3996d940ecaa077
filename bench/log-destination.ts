// `npx tsx bench/log-destination.ts | cat > /dev/null`: what pino's destination costs per request
// line with the options src/logger.ts could use, 32 lines per event-loop turn (as under load), into
// whatever stdout is (pipe it, as a container runtime does). Each option set runs in a child process
// of its own, interleaved over rounds; medians of CPU µs per line go to stderr.
import { spawnSync } from 'node:child_process';
import { pino } from 'pino';
import { createLogger, redactApiKeys, redactCredentialParameters } from '../src/logger.js';

/** The service's own logger (src/logger.ts): the last set below, its lines batched as bytes. */
const SERVICE = "the service's (src/logger.ts)";
const OPTIONS: Record<string, Parameters<typeof pino.destination>[0]> = {
  'sync, one write per line (pino default)': { dest: 1, sync: true },
  'sync, 4 KiB batches, flushed every 100 ms': { dest: 1, sync: true, minLength: 4096, periodicFlush: 100 },
  'async (thread pool), one write per line': { dest: 1, sync: false },
  'async, 4 KiB batches, flushed every 100 ms': { dest: 1, sync: false, minLength: 4096, periodicFlush: 100 },
  // The same destination with the service's key redaction looking at every line (src/logger.ts).
  'sync, 4 KiB batches, keys redacted': { dest: 1, sync: true, minLength: 4096, periodicFlush: 100 },
  [SERVICE]: {},
};
/** The option sets that run src/logger.ts's redaction of key-shaped text on each line. */
const REDACTED = new Set(['sync, 4 KiB batches, keys redacted', SERVICE]);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const TURNS = 20_000;
const PER_TURN = 32;

if (process.env.LOG_DESTINATION) {
  const redacted = REDACTED.has(process.env.LOG_DESTINATION);
  const hooks = redacted ? { streamWrite: redactApiKeys } : {};
  const logger =
    process.env.LOG_DESTINATION === SERVICE
      ? createLogger({ logLevel: 'info' })
      : pino({ level: 'info', hooks }, pino.destination(OPTIONS[process.env.LOG_DESTINATION]));
  const line = {
    reqId: 'f3a1c2d4-aaaa-bbbb-cccc-0123456789ab',
    trace_id: '0af7651916cd43dd8448eb211c80319c',
    span_id: 'b7ad6b7169203331',
    method: 'GET',
    route: '/v1/pets',
    url: '/v1/pets?limit=20',
    statusCode: 200,
    responseTimeMs: 1.2,
  };
  const before = process.cpuUsage();
  for (let turn = 0; turn < TURNS; turn++) {
    for (let i = 0; i < PER_TURN; i++) {
      // A fields object per line, as src/http/request-record.ts makes it (its url redacted there).
      logger.info({ ...line, url: redacted ? redactCredentialParameters(line.url) : line.url }, 'request completed');
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  const used = process.cpuUsage(before);
  logger.flush();
  process.stderr.write(`${(used.user + used.system) / (TURNS * PER_TURN)}\n`);
} else {
  const times: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of Object.keys(OPTIONS)) {
      const child = spawnSync(process.execPath, [...process.execArgv, process.argv[1]!], {
        env: { ...process.env, LOG_DESTINATION: name },
        stdio: ['ignore', 'inherit', 'pipe'],
      });
      (times[name] ??= []).push(Number(child.stderr.toString().trim()));
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  for (const [name, values] of Object.entries(times)) process.stderr.write(`${name.padEnd(45)} ${median(values).toFixed(2)} µs CPU/line\n`);
}
