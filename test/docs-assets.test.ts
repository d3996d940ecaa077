// The docs page's assets over HTTP (src/http/docs-plugin.ts): served from memory, with the caching
// headers a browser revalidates with, HEAD, and gzip for clients that take it; no file is opened
// per request, however many answers wait unread.
import { readdirSync, readFileSync } from 'node:fs';
import { request, type IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import { connect, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from './support/test-server.js';

const DIST = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const BUNDLE = '/v1/docs/assets/swagger-ui-bundle.js';
const bundle = readFileSync(join(DIST, 'swagger-ui-bundle.js'));

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

/** A GET whose body is returned as sent (fetch would decompress it). */
function rawGet(path: string, headers: Record<string, string>): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(`${server.baseUrl}${path}`, { headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ headers: response.headers, body: Buffer.concat(chunks) }));
    })
      .on('error', reject)
      .end();
  });
}

const get = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  fetch(`${server.baseUrl}${path}`, { method, headers: { 'accept-encoding': 'identity', ...headers } });

describe('the docs assets over HTTP', () => {
  it('serves the file as it is, with its type, validators and cache lifetime', async () => {
    const response = await get(BUNDLE);
    expect(response.status).toBe(200);
    expect(
      Object.fromEntries(['content-type', 'cache-control', 'vary', 'content-length'].map((name) => [name, response.headers.get(name)])),
    ).toEqual({
      'content-type': 'text/javascript; charset=utf-8',
      'cache-control': 'public, max-age=3600',
      vary: 'accept-encoding',
      'content-length': String(bundle.length),
    });
    expect(response.headers.get('etag')).toMatch(/^"[\w-]+"$/);
    expect(Date.parse(response.headers.get('last-modified')!)).not.toBeNaN();
    expect(Buffer.from(await response.arrayBuffer()).equals(bundle)).toBe(true);
    const icon = await get('/v1/docs/assets/favicon-32x32.png');
    expect(icon.headers.get('content-type')).toBe('image/png');
    expect(icon.headers.get('vary')).toBeNull();
    expect(Buffer.from(await icon.arrayBuffer()).equals(readFileSync(join(DIST, 'favicon-32x32.png')))).toBe(true);
  });

  it('answers 304 to a copy that is still current, by ETag (weak or strong) or by date, and 200 to any other', async () => {
    const first = await get(BUNDLE);
    await first.arrayBuffer();
    const etag = first.headers.get('etag')!;
    const lastModified = first.headers.get('last-modified')!;
    const conditions: Array<Record<string, string>> = [
      { 'if-none-match': etag },
      { 'if-none-match': `"other", W/${etag}` },
      { 'if-modified-since': lastModified },
    ];
    for (const headers of conditions) {
      const response = await get(BUNDLE, headers);
      expect(response.status, JSON.stringify(headers)).toBe(304);
      expect(await response.text()).toBe('');
    }
    // If-None-Match decides when present (RFC 9110 13.2.2).
    const changed = await get(BUNDLE, { 'if-none-match': '"other"', 'if-modified-since': lastModified });
    expect(changed.status).toBe(200);
    expect((await changed.arrayBuffer()).byteLength).toBe(bundle.length);
    const older = await get(BUNDLE, { 'if-modified-since': new Date(Date.parse(lastModified) - 1_000).toUTCString() });
    expect(older.status).toBe(200);
    await older.arrayBuffer();
  });

  it('answers HEAD with the headers of GET and no body', async () => {
    const response = await get(BUNDLE, {}, 'HEAD');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe(String(bundle.length));
    expect(await response.text()).toBe('');
  });

  it('sends gzip to a client that takes it, once it is made, and never to one that refuses it', async () => {
    const compressed = await vi.waitFor(
      async () => {
        const answer = await rawGet(BUNDLE, { 'accept-encoding': 'gzip, deflate, br' });
        expect(answer.headers['content-encoding']).toBe('gzip');
        return answer;
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(compressed.body.length).toBeLessThan(bundle.length / 2);
    expect(compressed.headers['content-length']).toBe(String(compressed.body.length));
    expect(gunzipSync(compressed.body).equals(bundle)).toBe(true);
    const identity = await rawGet(BUNDLE, {});
    expect(identity.body.equals(bundle)).toBe(true);
    expect(compressed.headers.etag).not.toBe(identity.headers.etag);
    const refused = await rawGet(BUNDLE, { 'accept-encoding': 'gzip;q=0, *;q=1' });
    expect(refused.headers['content-encoding']).toBeUndefined();
  });

  it('opens no file per request: 20 connections each pipelining 8 requests for the bundle, unread, hold 20 descriptors', async () => {
    const descriptors = () => readdirSync('/proc/self/fd').length;
    const before = descriptors();
    const port = Number(new URL(server.baseUrl).port);
    const sockets: Socket[] = [];
    try {
      for (let i = 0; i < 20; i++) {
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => {});
        socket.pause(); // never reads
        socket.write(`GET ${BUNDLE} HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(8));
        sockets.push(socket);
      }
      // Both ends of each connection are in this process; anything more would be files.
      await vi.waitFor(() => expect(descriptors()).toBeGreaterThanOrEqual(before + 40), { timeout: 10_000, interval: 50 });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(descriptors()).toBeLessThanOrEqual(before + 40 + 4);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });
});
