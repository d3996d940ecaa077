// Every error's answer, shaped here and nowhere else: whatever raised it becomes an `ErrorAnswer`
// (status and message), sent as the REST envelope (spec section 7) or in tRPC's own error shape under
// /trpc (src/http/call-pipeline.ts chooses).
//
// A 500 never carries its message, which can name internals (SQL, files): that is for the log. A 503
// keeps its message: only our own code answers 503, with a sentence written for the caller.
import type { FastifyError } from 'fastify';
import { TRPCError, type AnyTRPCRouter, type TRPC_ERROR_CODE_KEY } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import { z } from 'zod';
import { DomainError, type DomainErrorKind } from '../domain/domain-errors.js';
import { BodyNotUtf8Error } from '../domain/json-text.js';
import { REFUSAL_CODES, type Refusal } from './refusals.js';
import { trpcInternals, type TrpcResponseItem } from './trpc-internals.js';

/** The values of `code`: tRPC's error code names, so a client sees the same word on both surfaces. */
const ERROR_CODES = {
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

/** What an error answer says, on either surface: its HTTP status and the message for the caller. */
export interface ErrorAnswer {
  status: number;
  message: string;
}

/** A request Node's HTTP parser refused, as far as its raw bytes tell. */
export interface ClientErrorAnswer extends ErrorAnswer {
  status: 400 | 405 | 408 | 431;
  /** The methods the target allows (the Allow header of a 405). */
  allow?: string;
  /** The request line's method and target; '' when the line could not be read. */
  method: string;
  target: string;
  /** An answer to HEAD has no body (a client would read one as the next response). */
  isHead: boolean;
}

const INTERNAL_ERROR_MESSAGE = 'Internal server error';

function publicMessage(status: number, message: string): string {
  return status === 500 ? INTERNAL_ERROR_MESSAGE : message;
}

function isErrorStatus(status: number): status is ErrorStatus {
  return status in ERROR_CODES;
}

/** A status not listed becomes 400 (other 4xx) or 500. */
function knownStatus(status: number): ErrorStatus {
  return isErrorStatus(status) ? status : status >= 400 && status < 500 ? 400 : 500;
}

// Errors in.

/** The zod error of a call's input that failed validation, or null. */
function inputValidationError(error: TRPCError): z.core.$ZodError | null {
  return error.code === 'BAD_REQUEST' && error.cause instanceof z.core.$ZodError && error.cause.issues.length > 0 ? error.cause : null;
}

/** A procedure's error (or anything it threw, as tRPC wraps it): tRPC's status, validation issues as one sentence. */
export function answerForTRPCError(error: TRPCError): ErrorAnswer {
  const invalid = inputValidationError(error);
  return { status: getHTTPStatusCodeFromError(error), message: invalid ? describeIssues(invalid.issues) : error.message };
}

const REFUSAL_STATUS = Object.fromEntries(
  REFUSAL_CODES.map((code) => [code, getHTTPStatusCodeFromError(new TRPCError({ code }))]),
) as Record<Refusal['code'], number>;

/** A refusal before the procedure runs (src/api/refusals.ts). */
export function answerForRefusal(refusal: Refusal): ErrorAnswer {
  return { status: REFUSAL_STATUS[refusal.code], message: refusal.message };
}

/** An error Fastify raised itself (body parsing, limits, content type, a URL it cannot decode). */
export function answerForFastifyError(error: FastifyError): ErrorAnswer {
  if (error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError) {
    return { status: 400, message: 'body: is not valid JSON' };
  }
  if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return { status: 400, message: 'body: is required (a JSON object)' };
  if (error instanceof BodyNotUtf8Error) return { status: 400, message: error.message };
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { status: 413, message: 'body: is larger than the limit' };
  if (error.code === 'FST_ERR_BAD_URL') return { status: 400, message: 'the URL is malformed (invalid percent-encoding)' };
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return { status: 415, message: 'body: must be sent as Content-Type: application/json' };
  }
  return { status: knownStatus(error.statusCode ?? 500), message: error.message };
}

/** A CONNECT request (a raw socket, outside Fastify): the service is no proxy. `allow`: the methods served anywhere. */
export function answerForConnect(target: string, allow: readonly string[]): ClientErrorAnswer {
  return {
    status: 405,
    message: 'CONNECT is not supported: this service is not a proxy',
    method: 'CONNECT',
    target,
    isHead: false,
    allow: allow.join(', '),
  };
}

/** A request Node's parser refused, from its raw packet. */
export function answerForClientError(error: { code?: string; rawPacket?: unknown }): ClientErrorAnswer {
  const packet = Buffer.isBuffer(error.rawPacket) ? error.rawPacket.subarray(0, 8 * 1024).toString('latin1') : '';
  const [method = '', target = ''] = packet.split('\r\n', 1)[0]!.split(' ');
  const isHead = method === 'HEAD';
  if (error.code === 'HPE_HEADER_OVERFLOW') return { status: 431, message: 'request headers are too large', method, target, isHead };
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return {
      status: 408,
      message: 'the request did not arrive in time (see REQUEST_TIMEOUT_MS and HEADERS_TIMEOUT_MS)',
      method,
      target,
      isHead,
    };
  }
  return { status: 400, message: 'the request is not valid HTTP', method, target, isHead };
}

interface Issue {
  path?: readonly PropertyKey[];
  message: string;
}

/** One readable sentence from validation issues: `name: must not be empty; categoryId: must be an integer`. */
function describeIssues(issues: readonly Issue[], subject = 'body'): string {
  // One problem per field is enough to fix it; the first is the most basic (type before format).
  const byField = new Map<string, string>();
  for (const issue of issues) {
    const where = issue.path && issue.path.length > 0 ? issue.path.map(String).join('.') : subject;
    if (!byField.has(where)) byField.set(where, `${where}: ${issue.message}`);
  }
  return [...byField.values()].join('; ');
}

/** The REST envelope of an answer of `status` (the document's examples use it too). */
export function errorEnvelope(status: number, message: string): ErrorEnvelope {
  const known = knownStatus(status);
  return { code: ERROR_CODES[known], message: publicMessage(known, message), status: known };
}

/**
 * The router's errorFormatter: tRPC's default shape with the message a caller may see (for invalid input
 * the REST envelope's sentence), and the issues in `data.zodError` (zod's flattenError) as create-t3-app does.
 */
export function formatTrpcError<TShape extends { message: string; data: { httpStatus: number } }>({
  shape,
  error,
}: {
  shape: TShape;
  error: TRPCError;
}): TShape & { data: { zodError: { formErrors: string[]; fieldErrors: { [field: string]: string[] | undefined } } | null } } {
  const invalid = inputValidationError(error);
  const message = invalid ? describeIssues(invalid.issues) : publicMessage(shape.data.httpStatus, shape.message);
  return { ...shape, message, data: { ...shape.data, zodError: invalid ? z.flattenError(invalid) : null } };
}

/** The tRPC code for a status; tRPC has none for 431 (its shape says BAD_REQUEST, with httpStatus 431). */
function trpcCodeOf(status: number): TRPC_ERROR_CODE_KEY {
  const code = ERROR_CODES[knownStatus(status)];
  return code === 'REQUEST_HEADER_FIELDS_TOO_LARGE' ? 'BAD_REQUEST' : code;
}

export interface TrpcCall<TContext> {
  type: 'query' | 'mutation' | 'subscription' | 'unknown';
  path: string | undefined;
  input: unknown;
  ctx: TContext | undefined;
}

/** tRPC's error shape for `router`: per call, and for a request as a whole. */
export function trpcErrorShapes<TContext>(router: AnyTRPCRouter) {
  const trpc = trpcInternals<TContext>(router);

  /** `httpStatus` is the real status, also where tRPC has no code for it. */
  function requestBody({ status, message }: ErrorAnswer): string {
    const shape = trpc.errorShape({
      error: new TRPCError({ code: trpcCodeOf(status), message }),
      type: 'unknown',
      path: undefined,
      input: undefined,
      ctx: undefined,
    });
    if (shape.data.httpStatus !== status) shape.data = { ...shape.data, httpStatus: status };
    return trpc.serializeResponse({ error: shape });
  }

  return {
    /** One call's error, as tRPC's handler makes it: the item of a response (or of a batch's array). */
    callError(error: TRPCError, call: TrpcCall<TContext>): TrpcResponseItem {
      return { error: trpc.errorShape({ error, ...call }) };
    },

    refusedCall(refusal: Refusal, call: TrpcCall<TContext>): TrpcResponseItem {
      return { error: trpc.errorShape({ error: trpcErrorOfRefusal(refusal), ...call }) };
    },

    /** A refusal of a whole request (a batch or a stream): one error, without a procedure's path. */
    refusedRequest(refusal: Refusal): string {
      return trpc.serializeResponse({
        error: trpc.errorShape({ error: trpcErrorOfRefusal(refusal), type: 'unknown', path: undefined, input: undefined, ctx: undefined }),
      });
    },

    /** The body tRPC's handler sends for an error of the request as a whole (no procedure ran). */
    requestBody,
  };
}

/** tRPC's code for each kind of DomainError; the HTTP status is tRPC's for it. */
const DOMAIN_ERROR_CODES: Record<DomainErrorKind, TRPC_ERROR_CODE_KEY> = {
  invalid: 'BAD_REQUEST',
  not_found: 'NOT_FOUND',
  unprocessable: 'UNPROCESSABLE_CONTENT',
};

/** A service's DomainError as the TRPCError both surfaces answer; null for anything else. */
export function trpcErrorOfServiceError(cause: unknown): TRPCError | null {
  if (!(cause instanceof DomainError)) return null;
  return new TRPCError({ code: DOMAIN_ERROR_CODES[cause.kind], message: cause.message, cause });
}

/** A refusal (src/api/refusals.ts) thrown from a procedure. */
export function trpcErrorOfRefusal(refusal: Refusal, cause?: unknown): TRPCError {
  return new TRPCError({ code: refusal.code, message: refusal.message, cause });
}
