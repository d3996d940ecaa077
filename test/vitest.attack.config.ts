// `npm run test:attack`: the attack suites (slow clients, slow readers, connection floods and the
// mixed flood), inside a network namespace of their own whose loopback has an Ethernet's MTU
// (scripts/in-network-namespace.sh: root, or user namespaces, and `unshare` and `ip` are needed;
// without them the run fails, it is never skipped). Over the host's loopback (MTU 65,536) the
// kernel gives each unread socket a 4 MiB send buffer, which no real client path gives
// (docs/operations.md, "Connections"). Nothing outside the namespace is reachable over
// TCP, so the tests start their own PostgreSQL (TEST_POSTGRES_URL is unset by the npm script).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/** The suites that must run inside the namespace (test/vitest.config.ts leaves them out). */
export const ATTACK_SUITES = [
  'test/security/slow-clients.test.ts',
  'test/reliability/slow-readers.test.ts',
  'test/reliability/connection-floods.test.ts',
];

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    // One file at a time: each floods a real process on two shared cores.
    maxWorkers: 1,
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    name: 'attack',
    include: ATTACK_SUITES,
  },
});
