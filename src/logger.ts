// The service's pino logger: JSON lines on stdout, credentials redacted. @see docs/observability.md "Logs"
import { hostname } from 'node:os';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';
import { API_KEY_PREFIX, KEY_SHAPED_SOURCE } from './domain/api-key-shape.js';

/** Exact paths: a wildcard makes pino walk every field of every line (docs/benchmarks.md, "redaction by exact paths"). */
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

/**
 * Synchronous writes of up to LOG_BUFFER_BYTES, one system call for many lines; flushed at least every
 * LOG_FLUSH_INTERVAL_MS and at exit. A SIGKILL loses what is pending. @see docs/observability.md "Logs"
 */
export const LOG_BUFFER_BYTES = 4096;
export const LOG_FLUSH_INTERVAL_MS = 100;

const HOLDS_KEY = new RegExp(KEY_SHAPED_SOURCE, 'i');
const KEY_SHAPED = new RegExp(KEY_SHAPED_SOURCE, 'gi');
/** Parameters that carry a credential by name (an API_KEYS key has no shape of its own). */
const CREDENTIAL_PARAMETER = /([?&](?:access_token|api_?key|key|token)=)[^&#"\s]+/gi;
const HAS_CREDENTIAL_PARAMETER = /[?&](?:access_token|api_?key|key|token)=/i;

/**
 * Runs on every log line. A key written without `%` has `k_` or `K_` (its prefix's end): text with none of
 * the three costs three substring searches, no regular expression.
 */
export function redactApiKeys(text: string): string {
  if (!text.includes('%') && !text.includes('k_') && !text.includes('K_')) return text;
  return HOLDS_KEY.test(text) ? text.replace(KEY_SHAPED, `${API_KEY_PREFIX}[redacted]`) : text;
}

/** Credential query parameters' values redacted (a request line's `url`); other key-shaped text is left to redactApiKeys. */
export function redactCredentialParameters(target: string): string {
  return HAS_CREDENTIAL_PARAMETER.test(target) ? target.replace(CREDENTIAL_PARAMETER, '$1[redacted]') : target;
}

function stdoutDestination(): DestinationStream {
  // Lines as bytes (sonic-boom's `buffer` mode): its text mode measures the whole pending batch again at every line.
  const destination = pino.destination({
    dest: 1,
    sync: true,
    minLength: LOG_BUFFER_BYTES,
    periodicFlush: LOG_FLUSH_INTERVAL_MS,
    contentMode: 'buffer',
  });
  // pino flushes a destination at exit only in its asynchronous mode; this one's pending lines too.
  process.on('exit', () => destination.flushSync());
  // In that mode `write` takes a Buffer (its README); its types say text only.
  const writeBytes = destination.write.bind(destination) as unknown as (bytes: Buffer) => boolean;
  return {
    write: (line: string) => void writeBytes(Buffer.from(line)),
    flush: (done?: (error?: Error) => unknown) => destination.flush(done),
  } as DestinationStream;
}

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  const options = {
    level: config.logLevel,
    // pino's default, said here so that plainInfoWriter's lines carry it too.
    base: { pid: process.pid, hostname: hostname() },
    // Belt and braces: request lines hold no headers, but a credential must never reach a log.
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    // And anything key-shaped in any field, once per finished line.
    hooks: { streamWrite: redactApiKeys },
  };
  const out = probing(destination ?? stdoutDestination());
  const shared: Shared = { out, line: lineWith(pino.levels.values.info!, options.base) };
  // Fastify logs through a child of this logger (`child({}, { serializers })`): children share the destination.
  const logger = pino({ ...options, onChild: (child) => void sharing.set(child, shared) }, out);
  sharing.set(logger, shared);
  return logger;
}

// Plain info lines by one JSON.stringify, in pino's format: pino builds a line key by key (a departure:
// docs/architecture.md; its figure: docs/benchmarks.md, "the request line by one `JSON.stringify`").
type LineWriter = (fields: object) => void;
/** A destination whose next line can be caught instead of written: a logger's probe line. */
type Probing = DestinationStream & { catchLine(log: () => void): string };
interface Shared {
  readonly out: Probing;
  readonly line: (fields: object) => string;
}
/** The loggers createLogger made, and their children, with what they share. */
const sharing = new WeakMap<Logger, Shared>();
/** Each logger's writer, once probed (null: its probe line differed). */
const lineWriters = new WeakMap<Logger, LineWriter | null>();
/** Values pino and JSON.stringify could write differently: quotes, escapes, controls, non-ASCII, numbers. */
const PROBE_FIELDS = { reqId: 'a"b\\c/d', text: 'tab\tnul\u0000é€😀', number: 1.25, whole: -7, none: null, yes: true, msg: 'probe' };

function probing(destination: DestinationStream): Probing {
  let caught: string | null = null;
  return {
    write: (line: string) => void (caught === null ? destination.write(line) : (caught = line)),
    // As pino does for a destination without `flush`: `done` at once.
    flush(done?: (error?: Error) => unknown) {
      const { flush } = destination as { flush?: (done?: (error?: Error) => unknown) => void };
      if (flush) flush.call(destination, done);
      else done?.();
    },
    catchLine(log: () => void): string {
      caught = '';
      try {
        log();
        return caught;
      } finally {
        caught = null;
      }
    },
  } as Probing;
}

function lineWith(level: number, base: object): (fields: object) => string {
  const head = `{"level":${level},"time":`;
  const after = `,${JSON.stringify(base).slice(1, -1)},`;
  return (fields) => `${head}${Date.now()}${after}${JSON.stringify(fields).slice(1)}\n`;
}

/**
 * Writes `fields` (its last key `msg`; plain JSON values, no key a redaction path or a serializer names) as
 * `logger.info` would, through the same hook to the same destination. Probed once per logger, by catching the line
 * its own `info` writes for PROBE_FIELDS; null for a logger not made by createLogger (or a child of one), one whose
 * line differed (bindings, formatters), or one below info (its info writes nothing; probed when it writes again).
 */
export function plainInfoWriter(logger: Logger): LineWriter | null {
  const known = lineWriters.get(logger);
  if (known !== undefined) return known;
  const shared = sharing.get(logger);
  const info = pino.levels.values.info!;
  if (shared === undefined || logger.levelVal > info) return null;
  const { msg, ...fields } = PROBE_FIELDS;
  const probed = shared.out.catchLine(() => logger.info(fields, msg));
  const withoutTime = (text: string) => text.replace(/^(\{"level":\d+,"time":)\d+/, '$1');
  const same = withoutTime(redactApiKeys(shared.line(PROBE_FIELDS))) === withoutTime(probed);
  const writer = same ? (line: object) => void (logger.levelVal <= info && shared.out.write(redactApiKeys(shared.line(line)))) : null;
  lineWriters.set(logger, writer);
  return writer;
}
