// Client addresses through HAProxy, configured as docs/operations.md gives it: one client's wrong
// keys do not lock out another client (test/support/balancer-client-addresses.ts), and the
// instance's request log names each client's own address.
import { afterAll, describe, expect, it } from 'vitest';
import { expectWrongKeysLockOutOneClientOnly, CLIENT_ADDRESS_SETTINGS } from '../support/balancer-client-addresses.js';
import { freePort } from '../support/free-port.js';
import { startPrivateHaproxy, type PrivateHaproxy } from '../support/private-haproxy.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

const KEY = 'haproxy-addresses-key-0123456789';
let database: TestDatabase | undefined;
let haproxy: PrivateHaproxy | undefined;
let service: ServiceProcess | undefined;

afterAll(async () => {
  await haproxy?.stop();
  await service?.stop();
  await database?.drop();
});

describe('client addresses through HAProxy, as docs/operations.md configures it', () => {
  it("one client's wrong keys do not lock out another client's valid key", async () => {
    database = await createTestDatabase('postgresql');
    const port = await freePort();
    service = await startServiceProcess({
      DATABASE_URL: database.url,
      API_KEYS: KEY,
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      PORT: String(port),
      ...CLIENT_ADDRESS_SETTINGS,
    });
    haproxy = await startPrivateHaproxy({ servers: [{ name: 's1', port }] });
    await haproxy.waitFor('s1', 'UP');
    await expectWrongKeysLockOutOneClientOnly(haproxy.baseUrl, KEY);
    // Its log lines are all written once it has exited.
    expect(await service.stop()).toBe(0);
    const clients = new Set(
      service.logs.filter((line) => line.msg === 'request completed' && String(line.url).startsWith('/v1/')).map((line) => line.client),
    );
    expect([...clients].sort()).toEqual(['127.0.0.2', '127.0.0.3']);
  });
});
