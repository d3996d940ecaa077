// A copy of a folder tree made of hard links: the same files (no copy of their bytes), at a path of
// one's choosing. The PostgreSQL binaries npm installs sit inside the checkout, which the user
// PostgreSQL runs as (root may not) may be unable to enter; linked into a folder that user can
// reach, the same programs run (scripts/postgres-dev.ts, test/support/private-postgres.ts).
import { chmodSync, copyFileSync, linkSync, mkdirSync, readdirSync, readlinkSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Recreates the tree `from` at `to`: folders, symbolic links as they are (relative ones), files as
 * hard links, or as copies where a hard link cannot be made (another file system).
 */
export function linkTree(from: string, to: string): void {
  mkdirSync(to, { mode: 0o755 });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) linkTree(source, target);
    else if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else {
      try {
        linkSync(source, target);
      } catch {
        copyFileSync(source, target);
        chmodSync(target, statSync(source).mode);
      }
    }
  }
}
