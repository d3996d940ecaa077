// A request's path stays short: a REST list and a tRPC list each run code in at most 12 project files,
// measured as bench/request-files.ts measures the built service (V8's precise coverage of one request
// after a warm-up), here on the sources through tsx. A helper split into a new file, or a rule decided
// in one more place per request, shows up here by name.
import { describe, expect, it } from 'vitest';
import { measureRequestFiles } from '../bench/request-files.js';

const MOST_FILES = 12;

describe('the files one request runs code in', () => {
  it(`a REST list and a tRPC list: each at most ${MOST_FILES} project files, all under src/`, { timeout: 120_000 }, async () => {
    const measured = await measureRequestFiles(['--import', 'tsx', 'src/start.ts']);
    expect(measured.map(({ label }) => label)).toEqual(['REST list limit=20', 'tRPC list limit=20']);
    for (const { label, status, files } of measured) {
      const names = files.map(({ file }) => file);
      expect({ label, status }).toEqual({ label, status: 200 });
      // The measure sees the service's own files: the procedure, the SQL and the surface among them.
      expect(names).toEqual(expect.arrayContaining(['src/api/pets-router.ts', 'src/db/sql.ts']));
      expect(
        names.every((file) => file.startsWith('src/')),
        names.join(', '),
      ).toBe(true);
      expect(names.length, `${label}: ${names.join(', ')}`).toBeLessThanOrEqual(MOST_FILES);
    }
  });
});
