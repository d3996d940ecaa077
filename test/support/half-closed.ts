// A raw HTTP/1.1 request sent by a client that half-closes at once (`socket.end(request)`), as some
// scripts and HTTP/1.0-style clients do; resolves with everything the server sent before closing.
import { connect } from 'node:net';

export function halfClosedRequest(baseUrl: string, request: string): Promise<string> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.end(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.setTimeout(10_000, () => socket.destroy(new Error('no close within 10 s')));
  });
}
