// Through PgBouncer (DATABASE_URL with pgbouncer=true), the operator's two lines name the side that
// went away (docs/observability.md, "When a dependency stops answering"): PgBouncer itself when its
// port refuses or its connection is cut, PostgreSQL behind it when the server shuts down (its own
// 57P01 `terminating connection due to administrator command`, which PgBouncer passes on) and
// PgBouncer cannot log in to it. A private PostgreSQL cluster and PgBouncer, stopped under requests.
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildApp, type App } from '../../src/app.js';
import { parseConfig } from '../../src/config.js';
import { migrateDatabase, openDatabase, type Database } from '../../src/db/database.js';
import { atInfo, capturedLogger, expectMetric, INFO, STACK_OR_DRIVER_TEXT, WARN } from '../support/dependency-lines.js';
import { startPrivatePgBouncer, type PrivatePgBouncer } from '../support/private-pgbouncer.js';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.js';
import { TEST_CONFIG } from '../support/test-server.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The service through a private PgBouncer in front of a private PostgreSQL, logging at debug level. */
async function serviceBehindPgBouncer(settings: Record<string, string> = {}) {
  const cluster: PrivatePostgres = await startPrivatePostgres();
  cleanups.push(() => cluster.destroy());
  const pooler: PrivatePgBouncer = await startPrivatePgBouncer(cluster.url(), { serverLoginRetry: 1 });
  let poolerRunning = true;
  cleanups.push(async () => {
    if (poolerRunning) await pooler.stop();
  });
  await migrateDatabase(cluster.url('postgres'));
  const captured = capturedLogger();
  const url = `${pooler.url('postgres')}?pgbouncer=true`;
  const database: Database = await openDatabase(
    parseConfig({ DATABASE_URL: url, DATABASE_CONNECT_TIMEOUT_MS: '2000', ...settings }),
    captured.logger,
  );
  const app: App = await buildApp({ config: TEST_CONFIG, database, logger: captured.logger });
  cleanups.push(async () => {
    await app.close();
    await database.close();
  });
  const answer = (path: string) =>
    app.inject({ url: path, headers: { authorization: `Bearer ${TEST_CONFIG.apiKeys[0]}` } }).then((response) => response.statusCode);
  const metrics = async () => (await app.inject({ url: '/metrics' })).body;
  const stopPooler = async () => {
    await pooler.stop();
    poolerRunning = false;
  };
  return { cluster, pooler, stopPooler, app, answer, metrics, ...captured };
}

describe('PgBouncer stopped under requests', () => {
  it('is named as the side that stopped answering: PgBouncer, not PostgreSQL', { timeout: 90_000 }, async () => {
    const { stopPooler, answer, entries } = await serviceBehindPgBouncer();
    expect(await answer('/v1/pets')).toBe(200);

    await stopPooler();
    for (let request = 0; request < 5; request++) expect(await answer('/v1/pets')).toBe(503);
    const down = atInfo(entries()).filter((entry) => entry.level >= WARN);
    expect(down).toHaveLength(1);
    expect(down[0]).toMatchObject({
      dependency: 'pgbouncer',
      side: 'pgbouncer',
      msg: expect.stringMatching(/^PgBouncer is not answering/),
    });
    expect(String(down[0]!.target)).toMatch(/^127\.0\.0\.1:\d+\/postgres$/);
    // The first request to find it gone names the cause: a pooled connection cut, or the port refused.
    expect(String(down[0]!.cause)).toMatch(/Connection terminated|ECONNREFUSED/i);
  });
});

describe('PostgreSQL stopped (fast shutdown) behind PgBouncer under requests', () => {
  it(
    'is named as PostgreSQL behind PgBouncer, from its own 57P01 passed on by PgBouncer, in both lines',
    { timeout: 120_000 },
    async () => {
      // Queries may wait longer than the stop takes, so that PostgreSQL's own error reaches the one held.
      const { cluster, answer, metrics, entries, text } = await serviceBehindPgBouncer({ DATABASE_QUERY_TIMEOUT_MS: '5000' });
      expect(await answer('/v1/pets')).toBe(200);

      // A query in flight when PostgreSQL stops (held by another session's lock, straight on the server):
      // its server connection is terminated by the administrator's command, and PgBouncer passes that on.
      const locker = new pg.Client({ connectionString: cluster.url('postgres') });
      locker.on('error', () => {}); // the stop ends its session too
      await locker.connect();
      cleanups.push(() => locker.end().catch(() => {}));
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE pets IN ACCESS EXCLUSIVE MODE');
      const held = answer('/v1/pets');
      const waiting = await vi.waitFor(
        async () => {
          const { rows } = await locker.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'");
          expect(rows).toHaveLength(1);
          return rows[0]!.pid;
        },
        { timeout: 10_000, interval: 100 },
      );
      // The administrator's command ends the waiting session first (the stop alone races: the lock's
      // holder may go first and the query complete), with the 57P01 a fast stop sends every session.
      await locker.query('SELECT pg_terminate_backend($1)', [waiting]);
      expect(await held).toBe(503);
      await cluster.stop(); // pg_ctl -m fast: what an administrator's stop or restart does
      // Then PgBouncer has no server to give: each query waits for one until the query timeout.
      const later = await Promise.all(Array.from({ length: 4 }, () => answer('/v1/pets')));
      expect(later).toEqual([503, 503, 503, 503]);
      const refused = 1 + later.length;
      await expectMetric(metrics, 'pgbouncer', { up: 0, failed: refused });

      await cluster.start();
      const back = await vi.waitFor(
        () => {
          const found = entries().filter((entry) => /answers again/.test(entry.msg));
          expect(found).toHaveLength(1);
          return found[0]!;
        },
        { timeout: 30_000, interval: 100 },
      );
      expect(await answer('/v1/pets')).toBe(200);

      const operator = atInfo(entries()).filter((entry) => entry.msg !== 'request completed');
      const down = operator.filter((entry) => entry.level >= WARN);
      expect(down).toHaveLength(1);
      expect(down[0]).toMatchObject({
        dependency: 'pgbouncer', // what the service reaches (and the metrics' label)…
        side: 'postgresql', // …and which side of it went away
        msg: expect.stringMatching(/^PostgreSQL behind PgBouncer is not answering: requests that need the database are answered 503/),
      });
      expect(String(down[0]!.cause)).toMatch(/57P01 terminating connection due to administrator command/);
      expect(back).toMatchObject({ level: INFO, dependency: 'pgbouncer', side: 'postgresql', failedRequests: refused });
      expect(back.msg).toMatch(
        new RegExp(`^PostgreSQL behind PgBouncer answers again after \\d+\\.\\d s; ${refused} requests were answered 503`),
      );
      expect(operator.filter((entry) => /PgBouncer|PostgreSQL|database/.test(entry.msg)).map((entry) => entry.msg)).toEqual([
        down[0]!.msg,
        back.msg,
      ]);
      expect(
        text
          .join('')
          .split('\n')
          .filter((line) => line !== '' && (JSON.parse(line) as { level: number }).level >= INFO)
          .join('\n'),
      ).not.toMatch(STACK_OR_DRIVER_TEXT);
    },
  );
});
