// The one reach into a library's internals: the better-sqlite3 handle inside a connection of
// @prisma/adapter-better-sqlite3, so that the hot-path statements (src/db/sql.ts) run on the very
// connection Prisma uses. The adapter keeps the handle in a field (`client`) that is not part of
// its public interface (PostgreSQL needs nothing like it: PrismaPg takes a pg.Pool we create).
// Checked when the database is opened, so a changed adapter stops the service at start-up instead
// of failing requests; the versions are pinned exactly (package.json) for the same reason; and
// test/db/pet-repository.test.ts ("the better-sqlite3 handle beneath Prisma’s SQLite adapter") compares
// what the handle sees with what Prisma sees.
import type { SqlDriverAdapter } from '@prisma/driver-adapter-utils';
import Sqlite from 'better-sqlite3';

/** The better-sqlite3 database an adapter connection wraps. */
export function betterSqlite3HandleOf(connection: SqlDriverAdapter): Sqlite.Database {
  const client = (connection as unknown as { client?: unknown }).client;
  if (!(client instanceof Sqlite)) throw new Error('@prisma/adapter-better-sqlite3 no longer exposes its better-sqlite3 handle');
  if (!client.open) throw new Error('@prisma/adapter-better-sqlite3 handed out a closed better-sqlite3 handle');
  return client;
}
