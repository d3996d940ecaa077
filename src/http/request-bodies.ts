// What is decided about a request's body before any of it is read: whether one is coming, when the
// client is invited to send it (`Expect: 100-continue`), and whether the service can read its coding.
import type { IncomingHttpHeaders, Server } from 'node:http';

/** Whether the request's head announces a body (Transfer-Encoding, or a Content-Length other than 0). */
export function announcesBody(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}

/** Sends `100 Continue` when the body is first read, not when the head arrives, so an early refusal invites no body. */
export function continueWhenBodyIsRead(server: Server): void {
  server.on('checkContinue', (request, response) => {
    // 'resume': the body starts to flow (a 'data' listener, or Node's drain after the answer is sent).
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

/** A body in a content coding is refused (decoding it is work, or a bomb, of the client's choosing); null when it may be read. */
export function bodyEncodingError(method: string, headers: IncomingHttpHeaders): Error | null {
  const coding = headers['content-encoding'];
  if (coding === undefined || BODYLESS_METHODS.has(method) || !announcesBody(headers)) return null;
  return coding.split(',').every((part) => /^\s*(identity)?\s*$/i.test(part)) ? null : new BodyEncodingError();
}
