// Client addresses through nginx, configured as docs/operations.md gives it: one client's wrong
// keys do not lock out another client, and the instance's request log names each client's own
// address (test/support/balancer-client-addresses.ts).
import { describe, it } from 'vitest';
import { expectClientAddressesThrough } from '../support/balancer-client-addresses.js';
import { startPrivateNginx } from '../support/private-nginx.js';

describe('client addresses through nginx, as docs/operations.md configures it', () => {
  it("one client's wrong keys do not lock out another client's valid key", async () => {
    await expectClientAddressesThrough((port) => startPrivateNginx({ ports: [port] }));
  });
});
