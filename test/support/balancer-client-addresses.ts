// Client addresses through a balancer (docs/operations.md, "Client addresses"): the balancer
// appends the client's address to X-Forwarded-For and the instance, with TRUST_PROXY naming the
// balancer, counts wrong keys per client, not per balancer. One client (source address
// 127.0.0.2) guesses keys until it is refused; another (127.0.0.3), through the same balancer,
// then makes its first request with a valid key and is served. Without the forwarding, both would
// be the balancer's 127.0.0.1, and the second would wait out the first one's lockout (429).
import { request } from 'node:http';
import { expect } from 'vitest';
import { freePort } from './free-port.js';
import { startServiceProcess, type ServiceProcess } from './service-process.js';
import { createTestDatabase } from './test-database.js';

/** The instance's settings for it: a small wrong-key budget, the balancer (127.0.0.1) trusted. */
const CLIENT_ADDRESS_SETTINGS = { AUTH_FAILURES_PER_MINUTE: '5', TRUST_PROXY: '127.0.0.1' } as const;

function get(baseUrl: string, from: string, apiKey: string): Promise<{ status: number; contentType: string; body: string }> {
  const url = new URL('/v1/pets?limit=1', baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        localAddress: from,
        headers: { authorization: `Bearer ${apiKey}` },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, contentType: res.headers['content-type'] ?? '', body }));
      },
    );
    req.setTimeout(15_000, () => req.destroy(new Error('no answer in 15 s')));
    req.on('error', reject);
    req.end();
  });
}

interface Balancer {
  baseUrl: string;
  stop(): Promise<void>;
}

/**
 * One instance on its own PostgreSQL database with CLIENT_ADDRESS_SETTINGS, behind the balancer
 * `startBalancer` starts in front of its port: one client's wrong keys lock out that client only,
 * and the instance's request log names each client's own address.
 */
export async function expectClientAddressesThrough(startBalancer: (port: number) => Promise<Balancer>): Promise<void> {
  const key = 'balancer-addresses-key-0123456789';
  const database = await createTestDatabase('postgresql');
  let service: ServiceProcess | undefined;
  let balancer: Balancer | undefined;
  try {
    const port = await freePort();
    service = await startServiceProcess({
      DATABASE_URL: database.url,
      API_KEYS: key,
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      PORT: String(port),
      ...CLIENT_ADDRESS_SETTINGS,
    });
    balancer = await startBalancer(port);
    const { baseUrl } = balancer;

    const guesses = [];
    for (let n = 0; n < 8; n++) guesses.push(await get(baseUrl, '127.0.0.2', `wrong-key-${n}-0123456789abcdef`));
    // The guesser's budget (5) is spent, and it is refused; all in the envelope.
    expect(guesses.map((answer) => answer.status)).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
    expect(guesses.every((answer) => answer.contentType.startsWith('application/json'))).toBe(true);
    // Another client, first request, its valid key: served.
    const other = await get(baseUrl, '127.0.0.3', key);
    expect({ status: other.status, body: other.body.slice(0, 200) }).toMatchObject({ status: 200 });
    // The guesser stays refused, even with the valid key (not yet seen from its address).
    expect((await get(baseUrl, '127.0.0.2', key)).status).toBe(429);

    // Its log lines are all written once it has exited.
    expect(await service.stop()).toBe(0);
    const clients = new Set(
      service.logs.filter((line) => line.msg === 'request completed' && String(line.url).startsWith('/v1/')).map((line) => line.client),
    );
    expect([...clients].sort()).toEqual(['127.0.0.2', '127.0.0.3']);
  } finally {
    await balancer?.stop();
    await service?.stop();
    await database.drop();
  }
}
