// The service's pino logger: JSON lines on stdout, credentials redacted. @see docs/observability.md "Logs"
import { hostname } from 'node:os';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
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
    // Belt and braces: request lines hold no headers, but a credential must never reach a log.
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    // And anything key-shaped in any field, once per finished line.
    hooks: { streamWrite: redactApiKeys },
  } satisfies LoggerOptions;
  const stream = destination ?? stdoutDestination();
  const logger = pino(options, stream);
  if (!(stream as unknown as Record<symbol, unknown>)[pino.symbols.needsMetadataGsym]) {
    assertFlatLinesAsPino(options);
    flatLineStreams.add(stream);
  }
  return logger;
}

// A request's completion line, the line every request writes, serialized here rather than by pino's
// generic loop (docs/architecture.md, "departures"): the same bytes, through the same hook and stream.

/** Text pino writes between quotes as it is: no quote, backslash, control character (C0, DEL, C1) or lone surrogate. */
const PLAIN_TEXT = /^[^"\\\p{Cc}\p{Cs}]*$/u;

/** Fields pino redacts or Fastify serializes by name: never written here. */
const PINO_FIELDS = new Set([...REDACTED_PATHS.filter((path) => !path.includes('.')), 'req', 'res', 'err']);
/** pino's default `base`, read once as pino reads it. */
const BASE_FIELDS = `"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`;

/** The streams of the loggers createLogger made. */
const flatLineStreams = new WeakSet<DestinationStream>();
/** By logger: its stream when it is createLogger's or a child without bindings (Fastify's), else null. */
const flatLineLoggers = new WeakMap<object, DestinationStream | null>();

function flatLineStream(logger: Logger): DestinationStream | null {
  let stream = flatLineLoggers.get(logger);
  if (stream === undefined) {
    const candidate = (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym];
    stream = candidate && flatLineStreams.has(candidate) && Object.keys(logger.bindings()).length === 0 ? candidate : null;
    flatLineLoggers.set(logger, stream);
  }
  return stream;
}

/** `,"key":value` for each field: strings of plain text, numbers and null (undefined left out); null for anything else. */
function flatFields(fields: Readonly<Record<string, unknown>>): string | null {
  let json = '';
  for (const key in fields) {
    const value = fields[key];
    if (PINO_FIELDS.has(key)) return null;
    if (typeof value === 'string') {
      if (!PLAIN_TEXT.test(value)) return null;
      json += `,"${key}":"${value}"`;
    } else if (typeof value === 'number') json += `,"${key}":${Number.isFinite(value) ? value : null}`;
    else if (value === null) json += `,"${key}":null`;
    else if (value !== undefined) return null;
  }
  return json;
}

function flatLine(
  level: number,
  first: Readonly<Record<string, unknown>>,
  second: Readonly<Record<string, unknown>>,
  message: string,
): string | null {
  const fields = flatFields(first);
  const more = fields === null ? null : flatFields(second);
  if (more === null || !PLAIN_TEXT.test(message)) return null;
  return `{"level":${level},"time":${Date.now()},${BASE_FIELDS}${fields}${more},"msg":"${message}"}\n`;
}

/**
 * Writes `first` and `second`'s fields (field names are the code's own) as pino's `info` line on a logger createLogger
 * made; false, writing nothing, for any other logger or a value pino would escape: the caller logs it through pino.
 */
export function writeFlatInfoLine(
  logger: Logger | object,
  first: Readonly<Record<string, unknown>>,
  second: Readonly<Record<string, unknown>>,
  message: string,
): boolean {
  const pinoLogger = logger as Logger;
  const stream = flatLineStream(pinoLogger);
  if (stream === null) return false;
  if (!pinoLogger.isLevelEnabled('info')) return true;
  const line = flatLine(pinoLogger.levels.values.info!, first, second, message);
  if (line === null) return false;
  stream.write(redactApiKeys(line));
  return true;
}

let flatLinesChecked = false;

/** At the first logger: a flat line as pino writes it with these options; a pino release that writes another refuses to start. */
function assertFlatLinesAsPino(options: LoggerOptions): void {
  if (flatLinesChecked) return;
  const fields = { reqId: 'r-1', route: null, statusCode: 200, responseTimeMs: 1.25, skipped: undefined, url: '/v1/pets?x=é' };
  let theirs = '';
  // As Fastify uses it: a child without bindings.
  pino(options, { write: (line: string) => void (theirs = line) })
    .child({})
    .info({ ...fields }, 'request completed');
  const ours = flatLine(pino.levels.values.info!, fields, {}, 'request completed');
  const withoutTime = (line: string | null) => line?.replace(/,"time":\d+,/, ',"time":0,');
  if (withoutTime(ours) !== withoutTime(theirs))
    throw new Error(`src/logger.ts: pino writes ${theirs.trim()}, the completion line ${ours?.trim()}`);
  flatLinesChecked = true;
}
