// `npm run contract:release`: records the contract as released, for the check that no later change
// breaks it by accident (test/contract.test.ts, docs/api.md "How the API changes"): the OpenAPI
// document as served (contract/released/openapi.json) and the client package's declarations
// (contract/released/client/*.d.ts). Run it when a version is released, and commit what it writes;
// then empty contract/deliberate-breaks.json, whose entries were about the version before.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { servedOpenApiDocument } from '../../src/cli/rest-api-types.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const RELEASED = join(ROOT, 'contract', 'released');

const document = await servedOpenApiDocument();
await mkdir(RELEASED, { recursive: true });
await writeFile(join(RELEASED, 'openapi.json'), `${JSON.stringify(document, null, 2)}\n`);

const scratch = await mkdtemp(join(tmpdir(), 'animal-store-release-'));
try {
  await rm(join(RELEASED, 'client'), { recursive: true, force: true });
  await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'scripts', 'pack-client.ts'), '--out-dir', scratch, '--declarations-dir', join(RELEASED, 'client')],
    { cwd: ROOT },
  );
} finally {
  await rm(scratch, { recursive: true, force: true });
}
console.log(`recorded the contract of version ${document.info.version} in contract/released/`);
