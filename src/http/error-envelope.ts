// The error envelope: every REST error, whoever raised it (a procedure, the REST plugin, Fastify,
// a hook), leaves as exactly `{ code, message, status }` (spec section 7). This module is the only
// place that builds one.
import type { FastifyError, FastifyReply } from 'fastify';
import { z } from 'zod';

/**
 * The values of `code`, one per status we answer with. They are tRPC's error code names, so a
 * client sees the same word on both surfaces (REST `code`, tRPC `error.data.code`).
 */
export const ERROR_CODES = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_SUPPORTED',
  408: 'TIMEOUT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'UNPROCESSABLE_CONTENT',
  429: 'TOO_MANY_REQUESTS',
  431: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
  500: 'INTERNAL_SERVER_ERROR',
  503: 'SERVICE_UNAVAILABLE',
} as const;
type ErrorStatus = keyof typeof ERROR_CODES;
export type ErrorCode = (typeof ERROR_CODES)[ErrorStatus];

export const ErrorEnvelope = z
  .object({
    code: z.enum(Object.values(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]).meta({
      description: 'Machine-readable error code.',
    }),
    message: z.string().meta({ description: 'Human-readable description: which input was wrong and how.' }),
    status: z.int().min(400).max(599).meta({ description: 'The HTTP status code of the response.', example: 400 }),
  })
  .meta({ description: 'The body of every error response.' });
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;

const GENERIC_SERVER_ERROR = 'Internal server error';

function isErrorStatus(status: number): status is ErrorStatus {
  return status in ERROR_CODES;
}

/**
 * The envelope for `status`. A status we do not list becomes 400 (other 4xx) or 500, and an
 * unexpected error (500) never carries its original message: that is for the log. A 503 keeps
 * its message: only our own code answers 503, with a sentence written for the caller.
 */
export function errorEnvelope(status: number, message: string): ErrorEnvelope {
  const known = isErrorStatus(status) ? status : status >= 400 && status < 500 ? 400 : 500;
  return {
    code: ERROR_CODES[known],
    message: known === 500 ? GENERIC_SERVER_ERROR : message,
    status: known,
  };
}

export function sendEnvelope(reply: FastifyReply, envelope: ErrorEnvelope): FastifyReply {
  return reply.code(envelope.status).type('application/json; charset=utf-8').send(envelope);
}

export function sendError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return sendEnvelope(reply, errorEnvelope(status, message));
}

interface Issue {
  path?: readonly PropertyKey[];
  message: string;
}

/** One readable sentence from validation issues: `name: must not be empty; categoryId: must be an integer`. */
export function describeIssues(issues: readonly Issue[], subject = 'body'): string {
  // One problem per field is enough to fix it; the first is the most basic (type before format).
  const byField = new Map<string, string>();
  for (const issue of issues) {
    const where = issue.path && issue.path.length > 0 ? issue.path.map(String).join('.') : subject;
    if (!byField.has(where)) byField.set(where, `${where}: ${issue.message}`);
  }
  return [...byField.values()].join('; ');
}

/** The envelope for an error Fastify raised itself (body parsing, limits, content type). */
export function envelopeForFastifyError(error: FastifyError): ErrorEnvelope {
  const status = error.statusCode ?? 500;
  if (error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError) {
    return errorEnvelope(400, 'body: is not valid JSON');
  }
  if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return errorEnvelope(400, 'body: is required (a JSON object)');
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return errorEnvelope(413, 'body: is larger than the limit');
  if (error.code === 'FST_ERR_BAD_URL') return errorEnvelope(400, 'the URL is malformed (invalid percent-encoding)');
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return errorEnvelope(415, 'body: must be sent as Content-Type: application/json');
  }
  return errorEnvelope(status, error.message);
}

/** A request Node's HTTP parser refused, as far as its raw bytes tell. */
export interface RawClientError {
  status: 400 | 408 | 431;
  message: string;
  /** The request line's target (path and query), when the line could be read; '' otherwise. */
  target: string;
  /** An answer to HEAD has no body (a client would read one as the start of a next response). */
  isHead: boolean;
}

/** What to answer a request Node's parser refused (`clientErrorHandler`), from its raw packet. */
export function describeClientError(error: { code?: string; rawPacket?: unknown }): RawClientError {
  const packet = Buffer.isBuffer(error.rawPacket) ? error.rawPacket.subarray(0, 8 * 1024).toString('latin1') : '';
  const [method = '', target = ''] = packet.split('\r\n', 1)[0]!.split(' ');
  const isHead = method === 'HEAD';
  if (error.code === 'HPE_HEADER_OVERFLOW') return { status: 431, message: 'request headers are too large', target, isHead };
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return { status: 408, message: 'the request did not arrive in time (see REQUEST_TIMEOUT_MS and HEADERS_TIMEOUT_MS)', target, isHead };
  }
  return { status: 400, message: 'the request is not valid HTTP', target, isHead };
}

const RAW_REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/** A whole HTTP/1.1 response with `body`, written straight to the socket, for such a request. */
export function rawHttpResponse(refusal: RawClientError, contentType: string, body: string): string {
  const reason = RAW_REASONS[refusal.status] ?? 'Bad Request';
  return (
    `HTTP/1.1 ${refusal.status} ${reason}\r\nContent-Type: ${contentType}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${refusal.isHead ? '' : body}`
  );
}

/**
 * The envelope in a whole response, for requests so malformed that Node's parser refused them
 * before Fastify saw a request (Fastify's own answer there is another body shape).
 */
export function rawHttpErrorResponse(refusal: RawClientError): string {
  const body = JSON.stringify(errorEnvelope(refusal.status, refusal.message));
  return rawHttpResponse(refusal, 'application/json; charset=utf-8', body);
}
