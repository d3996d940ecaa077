// Hot-path SQL: statements written once, prepared once per connection and run on the drivers
// (better-sqlite3 connections of the service's own; the `pg` pool Prisma's adapter also runs on),
// not through Prisma's query pipeline, which costs far more per request (figure in
// docs/benchmarks.md). Prisma keeps the models, the migrations and its own paths; src/db/database.ts
// opens the connections. The one place where the two dialects differ: placeholders (`?` → `$n`),
// preparing (named statements on PostgreSQL, the unnamed one through a transaction pooler), how
// Dates and 64-bit integers are written and read, which error is a unique violation, and
// transactions (see each function below).
import type Sqlite from 'better-sqlite3';
import pg from 'pg';
import { isSqliteBusy, retryWhileBusy } from './sqlite-busy-retry.js';

export type SqlDialect = 'sqlite' | 'postgresql';
type SqlValue = string | number | bigint | Date | null;
/** A result row: the statement's columns, in its SELECT / RETURNING order. */
export type SqlRow = unknown[];

/** One statement, in the SQL both databases share, with `?` placeholders. */
export interface Statement {
  /** Unique per statement text: PostgreSQL's prepared-statement name (unless through a transaction pooler). */
  readonly name: string;
  readonly text: string;
  /**
   * PostgreSQL's own text with `$n` placeholders and the same parameters, where the shared SQL
   * would be planned badly there (the statement says why).
   */
  readonly postgresql?: string;
}

const names = new Map<string, string>();

/** Declares a statement. Each name belongs to one text for the life of the process. */
export function statement(name: string, text: string, options: { postgresql?: string } = {}): Statement {
  const key = `${text}\n${options.postgresql ?? ''}`;
  const known = names.get(name);
  if (known !== undefined && known !== key) throw new Error(`Statement name "${name}" is already used for other SQL`);
  names.set(name, key);
  return Object.freeze({ name, text, ...options });
}

/** The statement's text in a dialect: `?` becomes `$n` on PostgreSQL, unless it has a text of its own there. */
export function textFor(dialect: SqlDialect, { text, postgresql }: Statement): string {
  if (dialect === 'sqlite') return text;
  if (postgresql !== undefined) return postgresql;
  let index = 0;
  return text.replace(/\?/g, () => `$${++index}`);
}

/** Runs statements, on the database's shared connection(s) or inside one transaction. */
export interface SqlSession {
  /**
   * Runs a statement and resolves with its rows (empty for a write without RETURNING). A write
   * resolves only once committed (outside a transaction: its own autocommit); any error, the
   * commit's included, rejects.
   */
  query(statement: Statement, values: readonly SqlValue[]): Promise<SqlRow[]>;
}

export interface SqlDatabase extends SqlSession {
  readonly dialect: SqlDialect;
  /**
   * Runs `work` in a transaction on a connection of its own, committed when `work` resolves and
   * rolled back when it (or the commit) rejects. Nothing else runs on that connection meanwhile.
   * `work` runs statements on its session and nothing else (no other I/O, no timers): on SQLite
   * the transaction holds the database's write lock from BEGIN to COMMIT, and a statement on the
   * shared connection would wait for it, synchronously, until the busy timeout.
   */
  transaction<T>(work: (session: SqlSession) => Promise<T>): Promise<T>;
  /** Whether an error is a unique-index violation (a row with the same key exists). */
  isUniqueViolation(error: unknown): boolean;
}

// ---------------------------------------------------------------------------------------------
// SQLite: better-sqlite3, synchronous.

/** A Date as Prisma's SQLite adapter stores it (its default `iso8601` timestamp format). */
function sqliteValue(value: SqlValue): Exclude<SqlValue, Date> {
  return value instanceof Date ? value.toISOString().replace('Z', '+00:00') : value;
}

/**
 * Runs one statement on one better-sqlite3 connection: the only place SQLite statements execute.
 * `all()` for statements that return rows (RETURNING included) and `run()` for the others: both
 * step the statement to its end and throw the commit's error (SQLITE_FULL, an I/O error, a busy
 * lock). `get()` must not be used for writes: it steps once and resets, discarding that error.
 */
function sqliteExecutor(db: Sqlite.Database): SqlSession['query'] {
  const prepared = new Map<Statement, Sqlite.Statement<unknown[], SqlRow>>();
  const run = (statement: Statement, values: readonly SqlValue[]): SqlRow[] => {
    let ready = prepared.get(statement);
    if (!ready) {
      ready = db.prepare<unknown[], SqlRow>(statement.text);
      if (ready.reader) ready.raw(true);
      prepared.set(statement, ready);
    }
    const args = values.map(sqliteValue);
    if (ready.reader) return ready.all(...args);
    ready.run(...args);
    return [];
  };
  return async (statement, values) => {
    try {
      return run(statement, values);
    } catch (error) {
      // Another process holds the write lock past the (short) busy timeout: wait for it without
      // blocking the event loop (src/db/sqlite-busy-retry.ts).
      if (!isSqliteBusy(error)) throw error;
      return retryWhileBusy(() => run(statement, values));
    }
  };
}

/** Runs `task`s one at a time, in the order they were given. */
function serialQueue(): <T>(task: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return (task) => {
    const result = tail.then(task, task);
    tail = result.catch(() => {});
    return result;
  };
}

/**
 * SQLite: statements on `shared` (the connection Prisma also runs on), transactions on
 * `transactions`, a second connection to the same file. A transaction there is `BEGIN IMMEDIATE`
 * (the write lock up front, so two writers never deadlock upgrading a read lock) … `COMMIT`, and
 * transactions take turns on it: a statement of another request must never land inside one
 * (its effect would vanish with a rollback), which a connection of its own and one transaction
 * at a time rule out. Across processes, SQLite's lock (and its busy timeout) orders them.
 */
export function sqliteDatabase(shared: Sqlite.Database, transactions: Sqlite.Database): SqlDatabase {
  const query = sqliteExecutor(shared);
  const inTransaction = sqliteExecutor(transactions);
  const begin = transactions.prepare('BEGIN IMMEDIATE');
  const commit = transactions.prepare('COMMIT');
  const rollback = transactions.prepare('ROLLBACK');
  const oneAtATime = serialQueue();
  const session: SqlSession = { query: inTransaction };
  return {
    dialect: 'sqlite',
    query,
    transaction: (work) =>
      oneAtATime(async () => {
        // Waiting for another process's write lock happens here, asynchronously; once begun, the
        // transaction holds the lock and its statements never wait.
        await retryWhileBusy(() => begin.run());
        try {
          const result = await work(session);
          commit.run();
          return result;
        } catch (error) {
          // A failed COMMIT may leave the transaction open (SQLITE_BUSY); anything else closes it.
          if (transactions.inTransaction) rollback.run();
          throw error;
        }
      }),
    isUniqueViolation: (error) =>
      error instanceof Error &&
      ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY'].includes((error as { code?: string }).code ?? ''),
  };
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL: a pg pool.

/** A Date as UTC text: PostgreSQL's `timestamp(3)` columns (Prisma's DateTime) hold UTC wall-clock time. */
function postgresValue(value: SqlValue): Exclude<SqlValue, Date | bigint> {
  if (value instanceof Date) return value.toISOString();
  return typeof value === 'bigint' ? value.toString() : value;
}

/** How PostgreSQL statements run: src/db/database.ts decides from DATABASE_URL. */
export interface PostgresOptions {
  /**
   * Named prepared statements (parsed once per connection), or false for the unnamed statement
   * (parsed with every execution), which is all a transaction pooler such as PgBouncer 1.18 in
   * `pool_mode = transaction` can carry: it hands each statement to any server connection.
   */
  namedStatements: boolean;
  /** Told of every error a statement fails with, before it is thrown (src/db/database.ts logs a hint). */
  onError?: (error: unknown) => void;
}

const asText = (text: string) => text;

/**
 * How pg reads our statements' columns: its own parsers, except int8 (`bigint`: Prisma's BigInt,
 * autoincrement ids) as its text, which is what pg's int8 parser returns too, after testing each
 * value with a regular expression. The repositories read it through src/domain/int64.ts.
 */
const POSTGRES_TYPES: pg.CustomTypesConfig = {
  getTypeParser: (oid, format) =>
    oid === pg.types.builtins.INT8 && format !== 'binary' ? asText : (pg.types.getTypeParser(oid, format) as unknown),
};

/**
 * A statement as pg runs it: pg's query config (its text with `$n` placeholders, its name, none
 * for the unnamed statement, and rows as arrays), made once per statement and frozen.
 */
type PostgresQuery = Readonly<pg.QueryArrayConfig>;

/**
 * Runs one statement on the pool or on one pooled connection: the only place PostgreSQL
 * statements execute. Each execution hands pg a config that inherits the statement's frozen one
 * and has no property of its own, with the values as pg's second argument: pg copies a config's
 * own properties, by their descriptors, into every query it builds (keeping the prototype), and
 * for a plain config object that copy cost more than the rest of the query's making
 * (docs/benchmarks.md). test/db/pet-repository.test.ts checks the names and array rows arrive.
 */
function postgresExecutor(
  client: pg.Pool | pg.PoolClient,
  queries: WeakMap<Statement, PostgresQuery>,
  options: PostgresOptions,
): SqlSession['query'] {
  return async (statement, values) => {
    let query = queries.get(statement);
    if (query === undefined) {
      const text = textFor('postgresql', statement);
      query = Object.freeze({ text, name: options.namedStatements ? statement.name : undefined, rowMode: 'array', types: POSTGRES_TYPES });
      queries.set(statement, query);
    }
    try {
      const result = await client.query<SqlRow>(Object.create(query) as PostgresQuery, values.map(postgresValue));
      return result.rows;
    } catch (error) {
      options.onError?.(error);
      throw error;
    }
  };
}

/**
 * PostgreSQL: statements on the pool (each on whichever connection is free), transactions on one
 * connection taken from the pool for the whole BEGIN … COMMIT and returned after. A connection
 * whose ROLLBACK failed is closed rather than returned: its state is unknown.
 */
export function postgresDatabase(pool: pg.Pool, options: PostgresOptions): SqlDatabase {
  const queries = new WeakMap<Statement, PostgresQuery>();
  return {
    dialect: 'postgresql',
    query: postgresExecutor(pool, queries, options),
    async transaction(work) {
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        const result = await work({ query: postgresExecutor(client, queries, options) });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
        throw error;
      } finally {
        client.release(broken);
      }
    },
    isUniqueViolation: (error) => error instanceof pg.DatabaseError && error.code === '23505',
  };
}
