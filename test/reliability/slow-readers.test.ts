// What one connection holds is bounded however slowly it reads (src/http/connections.ts,
// src/http/docs-plugin.ts), against a real service process under the memory settings
// docs/operations.md gives and an open-file limit of 4,096:
// - 150 connections with a 2 KiB receive window, each pipelining 8 requests for the largest docs
//   asset and never reading: the process stays up, its RSS grows by less than 64 MB, and a
//   legitimate client on fresh connections is answered every time;
// - one connection pipelining 50,000 `GET /v1/pets?limit=100` with a key, never reading: RSS grows
//   by less than 32 MB;
// - an answer the client takes no byte of is ended after SEND_TIMEOUT_MS, while a client that
//   reads slowly but steadily keeps its connection;
// - 2,500 keyless slow readers from 10 addresses against the caps these memory settings give
//   (src/config.ts: 1,280 connections from V8's heap limit): RSS stays inside the 256 MiB container
//   docs/operations.md sizes for them, and a legitimate client is still answered.
// The slow readers: test/support/slow-readers.ts.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FROM_SOURCE, startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { holdSlowReaders, readInSteps, type HeldReaders } from '../support/slow-readers.js';
import { assertInNetworkNamespace } from '../support/floods.js';
import { operatorNodeOptions } from '../support/operations-doc.js';

// Over an Ethernet-sized path, not the host's loopback: `npm run test:attack` (test/vitest.attack.config.ts).
assertInNetworkNamespace();

const KEY = 'slow-readers-key-0123456789';
const NODE_OPTIONS = operatorNodeOptions();
const BUNDLE = '/v1/docs/assets/swagger-ui-bundle.js';
const MB = 1024 * 1024;

const dir = mkdtempSync(join(tmpdir(), 'animal-store-slow-readers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function rssBytes(service: ServiceProcess, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${service.child.pid}/status`, 'utf8');
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)![1]) * 1024;
}

/** RSS now, with the kernel's peak (VmHWM) reset to it (the process is our child). */
function quietRss(service: ServiceProcess): number {
  writeFileSync(`/proc/${service.child.pid}/clear_refs`, '5');
  return rssBytes(service, 'VmRSS');
}

/** One request on a new connection; resolves with its status, or the error's message. */
function freshRequest(port: number, path: string, headers: Record<string, string> = {}): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
      res.on('error', (error) => resolve(error.message));
    });
    req.on('error', (error) => resolve(error.message));
    req.setTimeout(20_000, () => req.destroy(new Error('no answer in 20 s')));
    req.end();
  });
}

/**
 * A series of /metrics, read on a new connection (a kept-alive one may be the idle connection the
 * service gives up when a newcomer needs its place).
 */
async function metric(service: ServiceProcess, line: RegExp): Promise<number> {
  const text = await new Promise<string>((resolve, reject) => {
    const url = new URL('/metrics', service.baseUrl);
    const req = request(url, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(body));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(20_000, () => req.destroy(new Error('no answer in 20 s')));
    req.end();
  });
  // A series not there yet (or not at all) counts as 0.
  const match = line.exec(text);
  return match ? Number(match[1]) : 0;
}

function startService(name: string, extra: Record<string, string> = {}, files = 4_096): Promise<ServiceProcess> {
  return startServiceProcess(
    {
      DATABASE_URL: `file:${join(dir, `${name}.db`)}`,
      API_KEYS: KEY,
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      NODE_OPTIONS,
      ...extra,
    },
    { command: ['prlimit', `--nofile=${files}:${files}`, process.execPath, ...FROM_SOURCE.slice(1)] },
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The CPU time the process has used so far, in clock ticks (utime + stime, fields 14 and 15 of /proc/<pid>/stat). */
function cpuTicks(service: ServiceProcess): number {
  const stat = readFileSync(`/proc/${service.child.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // from field 3 on
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * Waits until the process has stopped working on what it was sent (two seconds in a row with
 * under 50 ms of CPU each), or `ms` have passed: a process that still reads and answers keeps the
 * wait going to the end, and its memory is measured after all of it.
 */
async function untilIdle(service: ServiceProcess, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  let quietSeconds = 0;
  let ticks = cpuTicks(service);
  while (quietSeconds < 2 && performance.now() < deadline) {
    await sleep(Math.min(1_000, deadline - performance.now()));
    const now = cpuTicks(service);
    quietSeconds = now - ticks < 5 ? quietSeconds + 1 : 0;
    ticks = now;
  }
}

describe('slow readers of the docs assets', () => {
  it('150 connections × 8 pipelined requests for the bundle, never read: the process stays up, RSS grows < 64 MB, a legitimate client is answered every time', async () => {
    const service = await startService('assets');
    const port = Number(new URL(service.baseUrl).port);
    let readers: HeldReaders | undefined;
    try {
      // Warm: every path the test takes, once.
      for (let i = 0; i < 5; i++) {
        expect(await freshRequest(port, BUNDLE)).toBe(200);
        expect(await freshRequest(port, '/v1/pets?limit=1', { authorization: `Bearer ${KEY}` })).toBe(200);
      }
      await sleep(500);
      const quiet = quietRss(service);
      let peak = quiet;
      const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(service, 'VmRSS'))), 100);
      try {
        readers = await holdSlowReaders(port, 150, 8, BUNDLE);
        expect(readers.connected).toBe(150);
        await sleep(1_000);
        // Held (or, over the bound on unsent answers, closed): none went unnoticed.
        const open = await metric(service, /^animal_store_open_connections (\d+)$/m);
        const reclaimed = await metric(service, /^animal_store_slow_reader_closes_total\{reason="unsent_total"\} (\d+)$/m);
        expect(open + reclaimed).toBeGreaterThanOrEqual(150);
        // A legitimate client meanwhile, on fresh connections: the API and the page's assets.
        const answers: Array<number | string> = [];
        for (let i = 0; i < 40; i++) {
          answers.push(await freshRequest(port, '/v1/pets?limit=1', { authorization: `Bearer ${KEY}` }));
          if (i % 10 === 0) answers.push(await freshRequest(port, BUNDLE));
          await sleep(50);
        }
        expect(answers.filter((answer) => answer !== 200)).toEqual([]);
        await sleep(2_000);
      } finally {
        clearInterval(sampler);
      }
      expect(service.child.exitCode).toBeNull();
      peak = Math.max(peak, rssBytes(service, 'VmHWM'));
      expect((peak - quiet) / MB).toBeLessThan(64);
      expect(await freshRequest(port, '/healthz')).toBe(200);
    } finally {
      readers?.stop();
      await service.stop();
    }
  }, 120_000);
});

describe('one connection pipelining without reading', () => {
  it('50,000 GET /v1/pets?limit=100 with a key, never read: RSS grows < 32 MB', async () => {
    const service = await startService('pipelining', { RATE_LIMIT_PER_MINUTE: '0' });
    const port = Number(new URL(service.baseUrl).port);
    let greedy: Socket | undefined;
    try {
      const create = JSON.stringify({ name: 'a pet with a name long enough to weigh something', categoryId: 7, status: 'available' });
      for (let i = 0; i < 100; i++) {
        const response = await fetch(`${service.baseUrl}/v1/pets`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body: create,
        });
        expect(response.status).toBe(201);
      }
      const page = await fetch(`${service.baseUrl}/v1/pets?limit=100`, { headers: { authorization: `Bearer ${KEY}` } });
      expect((await page.arrayBuffer()).byteLength).toBeGreaterThan(10_000);
      await sleep(500);
      const quiet = quietRss(service);
      let peak = quiet;
      const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(service, 'VmRSS'))), 100);
      try {
        greedy = connect(port, '127.0.0.1');
        greedy.on('error', () => {});
        await new Promise<void>((resolve) => greedy!.on('connect', resolve));
        greedy.pause(); // never reads
        greedy.write(`GET /v1/pets?limit=100 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\n\r\n`.repeat(50_000));
        await untilIdle(service, 10_000);
      } finally {
        clearInterval(sampler);
      }
      expect(service.child.exitCode).toBeNull();
      peak = Math.max(peak, rssBytes(service, 'VmHWM'));
      expect((peak - quiet) / MB).toBeLessThan(32);
      expect(await freshRequest(port, '/v1/pets?limit=1', { authorization: `Bearer ${KEY}` })).toBe(200);
    } finally {
      greedy?.destroy();
      await service.stop();
    }
  }, 120_000);
});

describe('the send timeout', () => {
  const SEND_TIMEOUT_MS = 2_000;

  it('ends an answer the client takes no byte of after SEND_TIMEOUT_MS; a client that reads in small steps gets every answer', async () => {
    const service = await startService('send-timeout', { SEND_TIMEOUT_MS: String(SEND_TIMEOUT_MS) });
    const port = Number(new URL(service.baseUrl).port);
    let stalled: HeldReaders | undefined;
    try {
      const timedOut = () => metric(service, /^animal_store_slow_reader_closes_total\{reason="send_timeout"\} (\d+)$/m);
      expect(await timedOut()).toBe(0);
      // 128 KiB every 50 ms: far more than the kernel's buffers hold, taken a step at a time.
      const steady = readInSteps(port, 3, BUNDLE, { buffer: 131_072, step: 131_072, intervalMs: 50 });
      const started = performance.now();
      stalled = await holdSlowReaders(port, 1, 8, BUNDLE);
      expect(stalled.connected).toBe(1);
      let endedAfterMs = NaN;
      while (performance.now() - started < SEND_TIMEOUT_MS + 12_000) {
        if ((await timedOut()) >= 1) {
          endedAfterMs = performance.now() - started;
          break;
        }
        await sleep(100);
      }
      expect(endedAfterMs).toBeGreaterThanOrEqual(SEND_TIMEOUT_MS);
      // Plus the sweep's interval, the kernel's buffers filling first, and a shared machine's delays.
      expect(endedAfterMs).toBeLessThan(SEND_TIMEOUT_MS + 12_000);
      expect(await steady).toMatchObject({ complete: true, answers: 3 });
      expect(await timedOut()).toBe(1);
    } finally {
      stalled?.stop();
      await service.stop();
    }
  }, 60_000);
});

describe('the connection cap the memory settings give', () => {
  it('2,500 keyless slow readers of the bundle from 10 addresses: RSS stays under 256 MiB, the excess is refused, a legitimate client is answered', async () => {
    // Descriptors for far more than the cap: here the heap limit decides (src/config.ts).
    const service = await startService('memory-cap', {}, 8_192);
    const port = Number(new URL(service.baseUrl).port);
    const readers: HeldReaders[] = [];
    try {
      for (let i = 0; i < 5; i++) expect(await freshRequest(port, BUNDLE)).toBe(200);
      let peak = rssBytes(service, 'VmRSS');
      const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(service, 'VmRSS'))), 100);
      try {
        for (let i = 0; i < 10; i++) readers.push(await holdSlowReaders(port, 250, 8, BUNDLE, `127.0.0.${11 + i}`));
        expect(readers.reduce((sum, r) => sum + r.connected, 0)).toBe(2_500);
        // Until the service has taken in every connection: held, refused, or closed.
        const open = () => metric(service, /^animal_store_open_connections (\d+)$/m);
        const refused = () => metric(service, /^animal_store_connections_refused_total (\d+)$/m);
        const unsent = () => metric(service, /^animal_store_slow_reader_closes_total\{reason="unsent_total"\} (\d+)$/m);
        const timedOut = () => metric(service, /^animal_store_slow_reader_closes_total\{reason="send_timeout"\} (\d+)$/m);
        const reclaimed = () => metric(service, /^animal_store_connections_reclaimed_total (\d+)$/m);
        const closed = async () => (await unsent()) + (await timedOut()) + (await reclaimed());
        const deadline = performance.now() + 60_000;
        while ((await open()) + (await refused()) + (await closed()) < 2_500 && performance.now() < deadline) await sleep(500);
        await untilIdle(service, 10_000);
        expect(await open()).toBeLessThanOrEqual(1_280 + 1); // the cap, and the metrics request itself
        expect(await refused()).toBeGreaterThanOrEqual(2_500 - 1_280 - (await closed()));
        expect(await freshRequest(port, '/v1/pets?limit=1', { authorization: `Bearer ${KEY}` })).toBe(200);
      } finally {
        clearInterval(sampler);
      }
      expect(service.child.exitCode).toBeNull();
      peak = Math.max(peak, rssBytes(service, 'VmHWM'));
      expect(peak / MB, 'peak RSS, MiB').toBeLessThan(256);
    } finally {
      for (const r of readers) r.stop();
      await service.stop();
    }
  }, 180_000);
});
