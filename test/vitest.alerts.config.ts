// `npm run test:alerts`: the alerting rules operators load (docs/prometheus/animal-store-alerts.yml)
// and the metrics they read, checked by Prometheus's own promtool (Debian's `prometheus` package;
// `bash .ci/run` installs it): test/prometheus/alerts.test.ts. Fails at once without promtool. The
// PostgreSQL server of test/global-setup.ts, as `npm test` has it (the pool's gauges are scraped).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    maxWorkers: 1,
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    name: 'alerts',
    include: ['test/prometheus/**/*.test.ts'],
  },
});
