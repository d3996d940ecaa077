// The service's pino logger: one JSON object per line, on stdout unless told otherwise (tests
// capture it). Fastify logs through it; src/http/request-logging.ts writes one line per request.
// Human-readable output is for `npm run dev`, which pipes this through pino-pretty.
import { writeSync } from 'node:fs';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

/** Fields that would hold an API key or the Authorization header, at the places they can be logged. */
const REDACTED_PATHS = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'request.headers.authorization',
  'apiKey',
  'apiKeys',
  'key',
  'config.apiKeys',
  'err.config.headers.authorization',
];

/** Pending lines past this size are written at once rather than at the end of the turn. */
const MAX_PENDING_CHARS = 64 * 1024;
/** How long one write waits before trying again when the pipe is full (EAGAIN). */
const FULL_PIPE_PAUSE_MS = 1;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * stdout, written synchronously once per event-loop turn: the lines logged during a turn (a
 * request's line, and every other request answered in the same turn) go out in one write at its
 * end, or sooner when they pass MAX_PENDING_CHARS, and at process exit. A line per write system
 * call was ~4% of a small request's CPU under load (docs/benchmarks.md, "Figures behind the
 * code's choices"); pino's own destination (sonic-boom) also measures every line and encodes it
 * twice in synchronous mode, and its asynchronous mode hands writes to the thread pool.
 *
 * What it costs: a process killed outright (SIGKILL, the OOM killer) loses the lines of the turn
 * it was in, at most; any exit through `process.exit` or a signal handler writes them first. A
 * stdout that stops draining blocks the process, as any synchronous write does.
 */
class TurnBufferedStdout implements DestinationStream {
  private pending: string[] = [];
  private pendingChars = 0;
  private scheduled = false;

  constructor(private readonly fd = 1) {
    process.on('exit', () => this.flushSync());
  }

  write(line: string): void {
    this.pending.push(line);
    this.pendingChars += line.length;
    if (this.pendingChars >= MAX_PENDING_CHARS) this.flushSync();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flushSync());
    }
  }

  /** Writes every pending line now (pino's `logger.flush()` calls this too). */
  flushSync(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const text = this.pending.length === 1 ? this.pending[0]! : this.pending.join('');
    this.pending = [];
    this.pendingChars = 0;
    const bytes = Buffer.from(text, 'utf8');
    let offset = 0;
    while (offset < bytes.length) {
      try {
        offset += writeSync(this.fd, bytes, offset);
      } catch (error) {
        // A full non-blocking pipe: wait a moment, as a blocking write would. Anything else (a
        // closed stdout) drops these lines: the service goes on serving without its log.
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') return;
        Atomics.wait(pause, 0, 0, FULL_PIPE_PAUSE_MS);
      }
    }
  }

  flush(callback?: (error?: Error) => void): void {
    this.flushSync();
    callback?.();
  }
}

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  const options = {
    level: config.logLevel,
    // Belt and braces: request logs do not include headers, but a credential must never reach a log.
    // Exact paths, where a key could be (a request's headers, the settings, a key object): a wildcard
    // makes pino walk every field of every line, a third of a request line's cost (docs/benchmarks.md).
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  return pino(options, destination ?? new TurnBufferedStdout());
}
