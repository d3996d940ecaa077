// Client addresses through HAProxy, configured as docs/operations.md gives it: one client's wrong
// keys do not lock out another client, and the instance's request log names each client's own
// address (test/support/balancer-client-addresses.ts).
import { describe, it } from 'vitest';
import { expectClientAddressesThrough } from '../support/balancer-client-addresses.js';
import { startPrivateHaproxy } from '../support/private-haproxy.js';

describe('client addresses through HAProxy, as docs/operations.md configures it', () => {
  it("one client's wrong keys do not lock out another client's valid key", async () => {
    await expectClientAddressesThrough(async (port) => {
      const haproxy = await startPrivateHaproxy({ servers: [{ name: 's1', port }] });
      await haproxy.waitFor('s1', 'UP');
      return haproxy;
    });
  });
});
