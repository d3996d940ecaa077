// What nginx, configured as docs/operations.md gives it, does when an instance takes a request and
// resets the connection without answering (what a request sent just as an instance stops
// listening meets): a GET goes to the next instance; a create goes there only when it carries an
// Idempotency-Key; anything nginx answers itself is the service's 503 with Retry-After, in the
// envelope under /v1 and in tRPC's error shape under /trpc. The "instance" that resets is a server
// of the test's own (it reads the request, then resets), first in the upstream block: nginx's
// round robin (one worker) tries it first.
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/free-port.js';
import { startPrivateNginx, type PrivateNginx } from '../support/private-nginx.js';
import { createPet, startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

const KEY = 'nginx-retries-key-0123456789';

let database: TestDatabase;
let service: ServiceProcess;
let resetter: Server;
let resetterPort: number;
/** The request heads the resetting server took before resetting. */
const reset: string[] = [];
let nginx: PrivateNginx | undefined;

beforeAll(async () => {
  database = await createTestDatabase('postgresql');
  service = await startServiceProcess({
    DATABASE_URL: database.url,
    API_KEYS: KEY,
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    PORT: String(await freePort()),
  });
  resetterPort = await freePort();
  resetter = createServer((socket) => {
    socket.once('data', (chunk: Buffer) => {
      reset.push(chunk.toString('latin1').split('\r\n\r\n')[0]!);
      socket.resetAndDestroy();
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => resetter.listen(resetterPort, '127.0.0.1', resolve));
});
afterAll(async () => {
  await nginx?.stop();
  await new Promise((resolve) => resetter?.close(resolve));
  await service?.stop();
  await database?.drop();
});

const servicePort = () => Number(new URL(service.baseUrl).port);

/** A fresh nginx (no instance marked failed yet) over `ports`, one worker: its first pick is the first port. */
async function nginxOver(ports: number[]): Promise<PrivateNginx> {
  await nginx?.stop();
  reset.length = 0;
  nginx = await startPrivateNginx({ ports, workers: 1 });
  return nginx;
}

const create = (baseUrl: string, name: string, idempotencyKey?: string) => createPet(baseUrl, KEY, name, idempotencyKey);

async function petsNamed(name: string): Promise<number> {
  const response = await fetch(`${service.baseUrl}/v1/pets?limit=100`, { headers: { authorization: `Bearer ${KEY}` } });
  const pets = (await response.json()) as Array<{ name: string }>;
  return pets.filter((pet) => pet.name === name).length;
}

describe('nginx as docs/operations.md configures it, when an instance resets a request it took', () => {
  it('retries a create with an Idempotency-Key on the next instance: one pet', async () => {
    const { baseUrl } = await nginxOver([resetterPort, servicePort()]);
    const response = await create(baseUrl, 'keyed', 'retries-keyed-1');
    expect(response.status).toBe(201);
    expect(reset).toHaveLength(1);
    expect(reset[0]).toMatch(/^POST \/v1\/pets /);
    expect(await petsNamed('keyed')).toBe(1);
  });

  it('retries a GET on the next instance', async () => {
    const { baseUrl } = await nginxOver([resetterPort, servicePort()]);
    const response = await fetch(`${baseUrl}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(response.status).toBe(200);
    expect(reset).toHaveLength(1);
  });

  it("does not retry a create without one: the service's 503 envelope with Retry-After, not nginx's page", async () => {
    const { baseUrl } = await nginxOver([resetterPort, servicePort()]);
    const response = await create(baseUrl, 'keyless');
    expect(reset).toHaveLength(1);
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await response.json()).toEqual({ code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/Idempotency-Key/), status: 503 });
    expect(await petsNamed('keyless')).toBe(0);
  });

  it("answers in tRPC's error shape under /trpc when no instance answers", async () => {
    const { baseUrl } = await nginxOver([resetterPort]);
    const response = await fetch(`${baseUrl}/trpc/pets.list?input=${encodeURIComponent(JSON.stringify({ limit: 1 }))}`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await response.json()).toMatchObject({ error: { data: { code: 'SERVICE_UNAVAILABLE', httpStatus: 503 } } });
  });
});
