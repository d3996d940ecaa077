// What is decided about a request's body before any of it is read: whether one is coming, when the
// client is invited to send it (`Expect: 100-continue`), and whether the service can read its coding.
import type { IncomingHttpHeaders, Server } from 'node:http';

/** Whether the request's head announces a body (Transfer-Encoding, or a Content-Length other than 0). */
export function announcesBody(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}

/**
 * Node answers `Expect: 100-continue` with `100 Continue` as soon as the head arrives, unless the
 * server listens for 'checkContinue'. Here the 100 goes out when the body is first read, so a request
 * refused before its body is read (no valid key: the surfaces' onRequest hooks) gets its answer
 * alone, without an invitation to send the body (Node then closes the connection after the answer).
 */
export function continueWhenBodyIsRead(server: Server): void {
  server.on('checkContinue', (request, response) => {
    // 'resume': the body starts to flow (a parser's 'data' listener; Node's own drain after an answer,
    // by which time the head is sent).
    request.once('resume', () => {
      if (!response.headersSent) response.writeContinue();
    });
    server.emit('request', request, response);
  });
}

/** A request body in a content coding (gzip, deflate, br…): 415, before it is read. */
class BodyEncodingError extends Error {
  readonly statusCode = 415;
  constructor() {
    super('body: must be sent without a Content-Encoding (gzip, deflate, br…): the service reads uncompressed JSON only');
  }
}

/** Methods whose body Fastify never reads: a Content-Encoding on them changes nothing. */
const BODYLESS_METHODS = new Set(['GET', 'HEAD', 'TRACE']);

/**
 * The refusal of a body sent in a content coding: decoding it would be work (and a bomb) of the
 * client's choosing. Null when the body may be read: no Content-Encoding, `identity`, no body, or a
 * method whose body is not read.
 */
export function bodyEncodingError(method: string, headers: IncomingHttpHeaders): Error | null {
  const coding = headers['content-encoding'];
  if (coding === undefined || BODYLESS_METHODS.has(method) || !announcesBody(headers)) return null;
  return coding.split(',').every((part) => /^\s*(identity)?\s*$/i.test(part)) ? null : new BodyEncodingError();
}
