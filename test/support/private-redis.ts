// A Redis server of the test's own (`redis-server` on a free port, nothing written to disk), for
// tests that stop it under a running service, or that must not share counts with other tests.
// Redis for tests: TEST_REDIS_URL names a server to use (bash .ci/run sets it); tests that stop
// Redis always start their own. Without the `redis-server` program they fail, loudly.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { freePort } from './free-port.js';

const HOW_TO_GET_REDIS =
  'Redis is needed for the shared-limit tests: install the `redis-server` program (Debian: `apt-get install redis-server`; ' +
  '`bash .ci/run` does it), or set TEST_REDIS_URL to a Redis server the tests may use.';

export interface PrivateRedis {
  port: number;
  url: string;
  /** The redis-server's process id while it runs (a test may freeze it with SIGSTOP). */
  pid(): number | undefined;
  start(): Promise<void>;
  /** Stops it the way a crash or an operator would: connections are cut. */
  stop(): Promise<void>;
}

/** Every server started here and still running: killed when the test worker exits, however it exits. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export async function startPrivateRedis(): Promise<PrivateRedis> {
  if (spawnSync('redis-server', ['--version']).error) throw new Error(HOW_TO_GET_REDIS);
  const port = await freePort();
  let child: ChildProcess | undefined;
  const redis: PrivateRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    pid: () => child?.pid,
    start: () =>
      new Promise((resolve, reject) => {
        const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        child = server;
        running.add(server);
        let output = '';
        const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${output}`)), 10_000);
        server.stdout.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          if (/Ready to accept connections/i.test(output)) {
            clearTimeout(timer);
            resolve();
          }
        });
        server.on('exit', () => {
          running.delete(server);
          clearTimeout(timer);
          reject(new Error(`redis-server exited: ${output}`));
        });
      }),
    stop: async () => {
      const server = child;
      // Already stopped (killed by a signal, its exitCode stays null): nothing to wait for.
      if (!server || server.exitCode !== null || server.signalCode !== null) return;
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGKILL');
      await exited;
    },
  };
  await redis.start();
  return redis;
}

/** A Redis for tests that only need one: TEST_REDIS_URL's, or a private one (stopped by `release`). */
export async function testRedis(): Promise<{ url: string; release(): Promise<void> }> {
  if (process.env.TEST_REDIS_URL) return { url: process.env.TEST_REDIS_URL, release: async () => {} };
  const redis = await startPrivateRedis();
  return { url: redis.url, release: () => redis.stop() };
}
