// `npm run test:nginx`: the service behind a real nginx (Debian's `nginx-light`), configured as
// docs/operations.md gives it, three instances as real processes under steady load: a rolling
// deploy (test/nginx/rolling-deploy.test.ts) and client addresses through it
// (test/nginx/client-addresses.test.ts). Needs the `nginx` program (`bash .ci/run` installs it);
// fails at once without it (test/support/private-nginx.ts). The PostgreSQL server of
// test/global-setup.ts, as `npm test` has it.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    // One file at a time: each runs instances and a load on two shared cores.
    maxWorkers: 1,
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 240_000,
    hookTimeout: 60_000,
    name: 'nginx',
    include: ['test/nginx/**/*.test.ts'],
  },
});
