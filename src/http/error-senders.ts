// Sends an error answer (src/api/errors.ts decides it) in the surface's shape: the REST envelope or
// tRPC's error shape, through Fastify or as a whole response for a raw socket.
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorEnvelope, trpcErrorShapes, type ClientErrorAnswer, type ErrorAnswer } from '../api/errors.js';
import type { AnyTRPCRouter } from '@trpc/server';
import { formatTraceparent, traceContextFor } from '../observability/trace-context.js';

/** Headers every response carries: API answers are not for sniffing or for shared caches. */
export const RESPONSE_HEADERS = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' };

export function sendEnvelope(reply: FastifyReply, { status, message }: ErrorAnswer): FastifyReply {
  const envelope = errorEnvelope(status, message);
  return reply.code(envelope.status).type('application/json; charset=utf-8').send(envelope);
}

export function sendError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return sendEnvelope(reply, { status, message });
}

/** A path no route serves: 404 in the envelope, on every server and surface but /trpc. */
export function sendNoSuchResource(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendError(reply, 404, `No such resource: ${request.method} ${request.url.split('?')[0]}`);
}

/** No route for this method: 405 with `Allow` when the path is served with `allowed`, else 404. */
export function sendUnknownRoute(request: FastifyRequest, reply: FastifyReply, allowed: readonly string[]): FastifyReply {
  if (allowed.length === 0) return sendNoSuchResource(request, reply);
  reply.header('allow', allowed.join(', '));
  const [last, ...others] = [...allowed].reverse();
  const choices = others.length === 0 ? last : `${others.reverse().join(', ')} or ${last}`;
  return sendError(reply, 405, `${request.method} is not supported here; use ${choices}`);
}

const RAW_REASONS: Record<number, string> = {
  400: 'Bad Request',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};

const RAW_RESPONSE_HEADERS = Object.entries(RESPONSE_HEADERS)
  .map(([name, value]) => `${name}: ${value}\r\n`)
  .join('');

/** A whole HTTP/1.1 response for a request Node refused: a new request id and trace, since its own could not be read. */
function rawHttpResponse(
  answer: ClientErrorAnswer,
  contentType: string,
  body: string,
  headers: Readonly<Record<string, string>> = {},
): string {
  const reason = RAW_REASONS[answer.status] ?? 'Bad Request';
  const more = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return (
    `HTTP/1.1 ${answer.status} ${reason}\r\nContent-Type: ${contentType}\r\n${answer.allow ? `Allow: ${answer.allow}\r\n` : ''}` +
    `${RAW_RESPONSE_HEADERS}${more}X-Request-Id: ${randomUUID()}\r\ntraceparent: ${formatTraceparent(traceContextFor(undefined))}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${answer.isHead ? '' : body}`
  );
}

/** The envelope in a whole response, for a request Node's parser refused (Fastify's answer has another shape). */
export function rawHttpErrorResponse(answer: ClientErrorAnswer, headers?: Readonly<Record<string, string>>): string {
  return rawHttpResponse(answer, 'application/json; charset=utf-8', JSON.stringify(errorEnvelope(answer.status, answer.message)), headers);
}

/** tRPC's headers on every JSON answer (resolveResponse). */
export const TRPC_JSON_HEADERS = { vary: 'trpc-accept, accept', 'content-type': 'application/json' } as const;

const asIs = (text: string) => text;

/**
 * Sends `Content-Type: application/json` exactly, as tRPC does: Fastify adds `; charset=utf-8` to a string without a
 * serializer. A string, in one write with the head (a Buffer would be a copy and a second chunk).
 */
export function sendTrpcJson(reply: FastifyReply, status: number, headers: Readonly<Record<string, string>>, text: string): FastifyReply {
  return reply.code(status).headers(headers).serializer(asIs).send(text);
}

/** tRPC's error shape for a request as a whole (no procedure ran), sent through Fastify or on a raw socket. */
export function trpcErrorSenders(router: AnyTRPCRouter) {
  const { requestBody } = trpcErrorShapes(router);
  return {
    send: (reply: FastifyReply, answer: ErrorAnswer): FastifyReply =>
      sendTrpcJson(reply, answer.status, TRPC_JSON_HEADERS, requestBody(answer)),
    /** A whole HTTP response for a request Node's parser refused. */
    rawResponse: (answer: ClientErrorAnswer): string => rawHttpResponse(answer, TRPC_JSON_HEADERS['content-type'], requestBody(answer)),
  };
}
