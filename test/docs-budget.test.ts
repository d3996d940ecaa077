// What a maintainer is asked to read stays finishable in an hour: README at most 10 KB, no page of
// docs/ over 20 KB, docs/ at most 100 KB in all (the alerting rules included; a KB is 1,000 bytes,
// the stricter reading), and comments at most 15 % of src/'s non-blank lines. A page that grows past
// its budget says which one and by how much.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const KB = 1000;

function filesUnder(dir: string, keep: (file: string) => boolean): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((file) => statSync(file).isFile() && keep(file));
}

const bytes = (file: string) => statSync(file).size;

/** A line that is only a comment: `//`, or a line of a block comment. */
const isComment = (line: string) => line.startsWith('//') || line.startsWith('/*') || line.startsWith('*');

describe('docs and comments a maintainer can finish', () => {
  it('README is at most 10 KB', () => {
    expect(bytes(join(ROOT, 'README.md'))).toBeLessThanOrEqual(10 * KB);
  });

  it('no page of docs/ is over 20 KB, and docs/ is at most 100 KB in all', () => {
    const files = filesUnder(join(ROOT, 'docs'), () => true);
    expect(files.length).toBeGreaterThan(5);
    const over = files.filter((file) => bytes(file) > 20 * KB).map((file) => `${relative(ROOT, file)}: ${bytes(file)} B`);
    expect(over).toEqual([]);
    expect(files.reduce((total, file) => total + bytes(file), 0)).toBeLessThanOrEqual(100 * KB);
  });

  it('comments are at most 15 % of src/ (non-blank lines; generated clients aside)', () => {
    const sources = filesUnder(join(ROOT, 'src'), (file) => file.endsWith('.ts') && !file.includes(join('src', 'db', 'generated')));
    const lines = sources.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== ''),
    );
    expect(lines.length).toBeGreaterThan(1000);
    expect(lines.filter(isComment).length / lines.length).toBeLessThanOrEqual(0.15);
  });
});
