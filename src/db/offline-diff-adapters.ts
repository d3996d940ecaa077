// Adapters for writing a migration with no server: the engine only asks the server's version; the
// PostgreSQL stand-in answers that query alone and refuses the rest, so a needier engine fails loudly.
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import {
  ColumnTypeEnum,
  type SqlDriverAdapter,
  type SqlMigrationAwareDriverAdapterFactory,
  type SqlQuery,
  type SqlResultSet,
} from '@prisma/driver-adapter-utils';
import type { Provider } from './providers.js';

/** The oldest PostgreSQL we test on (Debian 12's). */
const POSTGRES_VERSION = { text: 'PostgreSQL 15.0', number: 150_000 };

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

export function offlineDiffAdapter(provider: Provider): SqlMigrationAwareDriverAdapterFactory {
  if (provider === 'sqlite') return new PrismaBetterSqlite3({ url: ':memory:' });
  return {
    provider: 'postgres',
    adapterName: 'offline-diff',
    connect: async () => postgresHandshakeOnly(),
    connectToShadowDb: async () => postgresHandshakeOnly(),
  };
}
