// Driver adapters for writing a migration with no database server at hand.
//
// A migration is the diff between two schema files (src/db/migrations.ts `createMigration`), so
// it needs no data; but the schema engine opens a connection first and asks the server who it
// is. SQLite answers that from memory. For PostgreSQL, a stand-in answers that one handshake
// query as a PostgreSQL server of the version we support would, and refuses anything else, so a
// future engine that needs more from the server fails loudly instead of diffing against nothing.
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import {
  ColumnTypeEnum,
  type SqlDriverAdapter,
  type SqlMigrationAwareDriverAdapterFactory,
  type SqlQuery,
  type SqlResultSet,
} from '@prisma/driver-adapter-utils';
import type { Provider } from './providers.js';

/** The oldest PostgreSQL the service is tested on (Debian 12's); the engine may shape SQL by version. */
const POSTGRES_VERSION = { text: 'PostgreSQL 15.0', number: 150_000 };

/** The engine's opening question: does the schema exist, and which server version is this. */
const HANDSHAKE = /^SELECT EXISTS\(SELECT 1 FROM pg_namespace WHERE nspname = \$1\), version\(\)/;

function postgresHandshakeOnly(): SqlDriverAdapter {
  const refuse = (what: string): never => {
    throw new Error(`the offline PostgreSQL diff adapter cannot ${what}: this step needs a real server`);
  };
  return {
    provider: 'postgres',
    adapterName: 'offline-diff',
    async queryRaw(query: SqlQuery): Promise<SqlResultSet> {
      if (!HANDSHAKE.test(query.sql)) return refuse(`run ${query.sql.slice(0, 80)}`);
      return {
        columnNames: ['exists', 'version', 'numeric_version'],
        columnTypes: [ColumnTypeEnum.Boolean, ColumnTypeEnum.Text, ColumnTypeEnum.Int32],
        rows: [[true, POSTGRES_VERSION.text, POSTGRES_VERSION.number]],
      };
    },
    executeRaw: async (query) => refuse(`run ${query.sql.slice(0, 80)}`),
    executeScript: async () => refuse('run a script'),
    startTransaction: async () => refuse('start a transaction'),
    getConnectionInfo: () => ({ schemaName: 'public', supportsRelationJoins: true }),
    dispose: async () => {},
  };
}

/** An adapter factory the schema engine can diff schema files with, needing no server. */
export function offlineDiffAdapter(provider: Provider): SqlMigrationAwareDriverAdapterFactory {
  if (provider === 'sqlite') return new PrismaBetterSqlite3({ url: ':memory:' });
  return {
    provider: 'postgres',
    adapterName: 'offline-diff',
    connect: async () => postgresHandshakeOnly(),
    connectToShadowDb: async () => postgresHandshakeOnly(),
  };
}
