// Hot-path SQL on the drivers, not Prisma (docs/benchmarks.md, "hot-path SQL as driver statements"); the one place
// the dialects differ. Its last section is the pets table's: the only code touching that table, one statement per
// operation, rows out as the contract's Pets (numbers for int64), inside a transaction or not.
// @see docs/architecture.md "Where we depart from a library, and why"
import type Sqlite from 'better-sqlite3';
import pg from 'pg';
import { DEFAULT_PET_STATUS, int64FromDatabase, type ListPetsInput, type NewPet, type Pet } from '../domain/pet-schemas.js';
import { POOL_QUEUE_FULL } from './database-errors.js';
import { isSqliteBusy, retryWhileBusy } from './sqlite-busy-retry.js';

export type SqlDialect = 'sqlite' | 'postgresql';
type SqlValue = string | number | bigint | Date | null;
type SqlRow = unknown[];

export interface Statement {
  readonly name: string;
  readonly text: string;
  /** PostgreSQL's own text (`$n` placeholders), where the shared SQL would be planned badly there. */
  readonly postgresql?: string;
}

const names = new Map<string, string>();

export function statement(name: string, text: string, options: { postgresql?: string } = {}): Statement {
  const key = `${text}\n${options.postgresql ?? ''}`;
  const known = names.get(name);
  if (known !== undefined && known !== key) throw new Error(`Statement name "${name}" is already used for other SQL`);
  names.set(name, key);
  return Object.freeze({ name, text, ...options });
}

export function textFor(dialect: SqlDialect, { text, postgresql }: Statement): string {
  if (dialect === 'sqlite') return text;
  if (postgresql !== undefined) return postgresql;
  let index = 0;
  return text.replace(/\?/g, () => `$${++index}`);
}

export interface SqlSession {
  /** Resolves with the rows once committed; any error, the commit's included, rejects. */
  query(statement: Statement, values: readonly SqlValue[]): Promise<SqlRow[]>;
}

export interface SqlDatabase extends SqlSession {
  readonly dialect: SqlDialect;
  /** On a connection of its own; statements only: on SQLite the shared connection would block on the write lock. */
  transaction<T>(work: (session: SqlSession) => Promise<T>): Promise<T>;
  isUniqueViolation(error: unknown): boolean;
}

/** As Prisma's SQLite adapter stores a Date (`iso8601`). */
function sqliteValue(value: SqlValue): Exclude<SqlValue, Date> {
  return value instanceof Date ? value.toISOString().replace('Z', '+00:00') : value;
}

interface SqliteConnection {
  prepared(statement: Statement): Sqlite.Statement<unknown[], SqlRow>;
  /** Synchronous. Never `get()` for writes: it steps once and discards the commit's error (SQLITE_FULL, I/O, busy). */
  run(statement: Statement, values: readonly SqlValue[]): SqlRow[];
  /** `run`, waiting for the write lock without blocking the process. */
  query: SqlSession['query'];
}

function sqliteConnection(db: Sqlite.Database): SqliteConnection {
  const cache = new Map<Statement, Sqlite.Statement<unknown[], SqlRow>>();
  const prepared = (statement: Statement) => {
    let ready = cache.get(statement);
    if (!ready) {
      ready = db.prepare<unknown[], SqlRow>(statement.text);
      if (ready.reader) ready.raw(true);
      cache.set(statement, ready);
    }
    return ready;
  };
  const run = (statement: Statement, values: readonly SqlValue[]): SqlRow[] => {
    const ready = prepared(statement);
    const args = values.map(sqliteValue);
    if (ready.reader) return ready.all(...args);
    ready.run(...args);
    return [];
  };
  const query = async (statement: Statement, values: readonly SqlValue[]) => {
    try {
      return run(statement, values);
    } catch (error) {
      if (!isSqliteBusy(error)) throw error;
      return retryWhileBusy(() => run(statement, values));
    }
  };
  return { prepared, run, query };
}

interface Queued {
  statement: Statement;
  values: readonly SqlValue[];
  resolve(rows: SqlRow[]): void;
  reject(error: unknown): void;
}

/** Runs `flush` at the end of the event-loop turn with the statements queued in it; `flush` settles each itself, never rejecting. */
function turnQueue(flush: (batch: Queued[]) => void | Promise<void>): SqlSession['query'] {
  let queued: Queued[] = [];
  let flushing = false;
  const next = async () => {
    flushing = true;
    const batch = queued;
    queued = [];
    await flush(batch);
    flushing = false;
    if (queued.length > 0) setImmediate(run);
  };
  const run = () => void next();
  return (statement, values) =>
    new Promise((resolve, reject) => {
      if (queued.push({ statement, values, resolve, reject }) === 1 && !flushing) setImmediate(run);
    });
}

type Outcome = { rows: SqlRow[] } | { error: unknown };

/**
 * Group reads: the reads one event-loop turn brings run together at its end, in one read transaction. In autocommit
 * each statement takes and drops SQLite's locks (fcntl calls) and checks the WAL again (docs/benchmarks.md, "group
 * reads"). Each read runs after it was asked, so it sees every write committed before; the transaction ends before
 * any is answered. A lone read, or a batch arriving inside a write batch's transaction, runs as before.
 */
function groupRead(db: Sqlite.Database, connection: SqliteConnection): SqlSession['query'] {
  const begin = db.prepare('BEGIN');
  const commit = db.prepare('COMMIT');
  const alone = (read: Queued) => void connection.query(read.statement, read.values).then(read.resolve, read.reject);
  return turnQueue((batch) => {
    if (batch.length === 1 || db.inTransaction) return batch.forEach(alone);
    try {
      begin.run();
    } catch {
      return batch.forEach(alone); // each read on its own, as without grouping
    }
    const outcomes = batch.map((read): Outcome => {
      try {
        return { rows: connection.run(read.statement, read.values) };
      } catch (error) {
        return { error };
      }
    });
    try {
      if (db.inTransaction) commit.run(); // a read transaction's COMMIT only drops its locks
    } catch (error) {
      return batch.forEach((read) => read.reject(error));
    }
    outcomes.forEach((outcome, i) => {
      const read = batch[i]!;
      if ('rows' in outcome) read.resolve(outcome.rows);
      else if (isSqliteBusy(outcome.error))
        alone(read); // waits for the lock, as a lone read does
      else read.reject(outcome.error);
    });
  });
}

/**
 * Group commit: the writes one event-loop turn brings are committed together, one transaction's WAL frames
 * and locks for the turn instead of one per write (docs/benchmarks.md, "group commit"). Each statement stays
 * atomic (SQLite undoes a failed one alone); a failure that ends the transaction (a full disk) fails every
 * write in it. The batch runs without a pause and each caller is answered after its COMMIT, so no read on
 * this connection sees a write that is not committed. A lone write runs as before, in autocommit.
 */
function groupCommit(db: Sqlite.Database, connection: SqliteConnection): SqlSession['query'] {
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  const rollback = db.prepare('ROLLBACK');
  const runBatch = (batch: Queued[]) => {
    const outcomes = batch.map((write): Outcome => {
      try {
        return { rows: connection.run(write.statement, write.values) };
      } catch (error) {
        if (!db.inTransaction) throw error;
        return { error };
      }
    });
    commit.run();
    return outcomes;
  };
  return turnQueue(async (batch) => {
    if (batch.length === 1) {
      const [write] = batch as [Queued];
      return connection.query(write.statement, write.values).then(write.resolve, write.reject);
    }
    try {
      await retryWhileBusy(() => begin.run());
      let outcomes;
      try {
        outcomes = runBatch(batch);
      } catch (error) {
        if (db.inTransaction) rollback.run();
        throw error;
      }
      outcomes.forEach((outcome, i) => ('rows' in outcome ? batch[i]!.resolve(outcome.rows) : batch[i]!.reject(outcome.error)));
    } catch (error) {
      for (const write of batch) write.reject(error);
    }
  });
}

/** The shared connection: reads and writes each grouped by turn. */
function sharedConnection(db: Sqlite.Database): SqlSession['query'] {
  const connection = sqliteConnection(db);
  const read = groupRead(db, connection);
  const write = groupCommit(db, connection);
  return async (statement, values) => (connection.prepared(statement).readonly ? read : write)(statement, values);
}

function serialQueue(): <T>(task: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return (task) => {
    const result = tail.then(task, task);
    tail = result.catch(() => {});
    return result;
  };
}

/** Transactions one at a time on their own connection; BEGIN IMMEDIATE, so two writers never deadlock upgrading a lock. */
export function sqliteDatabase(shared: Sqlite.Database, transactions: Sqlite.Database): SqlDatabase {
  const inTransaction = sqliteConnection(transactions).query;
  const begin = transactions.prepare('BEGIN IMMEDIATE');
  const commit = transactions.prepare('COMMIT');
  const rollback = transactions.prepare('ROLLBACK');
  const oneAtATime = serialQueue();
  const session: SqlSession = { query: inTransaction };
  return {
    dialect: 'sqlite',
    query: sharedConnection(shared),
    transaction: (work) =>
      oneAtATime(async () => {
        await retryWhileBusy(() => begin.run());
        try {
          const result = await work(session);
          commit.run();
          return result;
        } catch (error) {
          // A failed COMMIT may leave the transaction open (SQLITE_BUSY).
          if (transactions.inTransaction) rollback.run();
          throw error;
        }
      }),
    isUniqueViolation: (error) =>
      error instanceof Error &&
      ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY'].includes((error as { code?: string }).code ?? ''),
  };
}

/** `timestamp(3)` columns hold UTC wall-clock time. */
function postgresValue(value: SqlValue): Exclude<SqlValue, Date | bigint> {
  if (value instanceof Date) return value.toISOString();
  return typeof value === 'bigint' ? value.toString() : value;
}

export interface PostgresOptions {
  /** A transaction pooler (PgBouncer, transaction mode) carries the unnamed statement only, and no pipelines. */
  pooler: boolean;
  onError?: (error: unknown) => void;
}

const asText = (text: string) => text;

/** int8 as its text (pg's own parser tests it with a regex first); read through src/domain/pet-schemas.ts. */
const POSTGRES_TYPES: pg.CustomTypesConfig = {
  getTypeParser: (oid, format) =>
    oid === pg.types.builtins.INT8 && format !== 'binary' ? asText : (pg.types.getTypeParser(oid, format) as unknown),
};

type PostgresQuery = Readonly<pg.QueryArrayConfig>;

/** Runs `use` on a connection: the pool's (lent for one turn's statements) or a transaction's. */
type OnConnection = <T>(use: (connection: pg.ClientBase) => Promise<T>) => Promise<T>;

/**
 * Hands connections back to the pool at the end of the event-loop turn, all together: handing one back sends the
 * next waiting batch, whose write wakes a database backend, and a turn's wakes cost the kernel less together
 * than one by one, as the answers do (src/http/connections.ts; docs/benchmarks.md, "pooled PostgreSQL connections…").
 * @see docs/architecture.md "Where we depart from a library, and why"
 */
function returnAtTurnEnd(): (client: pg.PoolClient) => void {
  let returned: pg.PoolClient[] = [];
  const releaseAll = () => {
    const ready = returned;
    returned = [];
    for (const client of ready) client.release();
  };
  return (client) => {
    if (returned.push(client) === 1) setImmediate(releaseAll);
  };
}

/** The pool as src/db/database.ts bounds it: statements past its wait queue are refused at once. */
export interface StatementPool {
  connect(): Promise<pg.PoolClient>;
  /** How many of `count` statements may wait for a connection; the others are refused. */
  admit(count: number): number;
  connectFor(count: number): Promise<pg.PoolClient>;
}

interface Lent {
  use(connection: pg.ClientBase): Promise<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * The statements of one event-loop turn go out together on one pool connection, pipelined (pg's `pipeline` mode):
 * each has its own Sync, so each is its own implicit transaction and fails alone, as in autocommit; they wake one
 * database backend, not one each (docs/benchmarks.md, "a turn's PostgreSQL statements pipelined…"). Through a
 * transaction pooler, one statement a connection. After an error the connection is closed once all its statements
 * have settled, as `pool.query` closes it.
 */
function lendPerTurn(pool: StatementPool, giveBack: (client: pg.PoolClient) => void, pipelined: boolean): OnConnection {
  let waiting: Lent[] = [];
  const send = async (batch: Lent[]) => {
    const admitted = pool.admit(batch.length);
    for (const lent of batch.slice(admitted)) lent.reject(new Error(POOL_QUEUE_FULL));
    if (admitted === 0) return;
    const sent = batch.slice(0, admitted);
    let client: pg.PoolClient;
    try {
      client = await pool.connectFor(admitted);
    } catch (error) {
      for (const lent of sent) lent.reject(error);
      return;
    }
    let failed: Error | undefined;
    await Promise.all(
      sent.map((lent) =>
        lent.use(client).then(lent.resolve, (error: unknown) => {
          failed ??= error instanceof Error ? error : new Error(String(error));
          lent.reject(error);
        }),
      ),
    );
    if (failed) client.release(failed);
    else giveBack(client);
  };
  const flush = () => {
    const batch = waiting;
    waiting = [];
    if (pipelined) void send(batch);
    else for (const lent of batch) void send([lent]);
  };
  return <T>(use: (connection: pg.ClientBase) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      if (waiting.push({ use, resolve, reject }) === 1) setImmediate(flush);
    });
}

/** Executions inherit the frozen config: pg copies its own properties per query (docs/benchmarks.md, "pg's query config…"). */
function postgresExecutor(
  onConnection: OnConnection,
  queries: WeakMap<Statement, PostgresQuery>,
  options: PostgresOptions,
): SqlSession['query'] {
  return async (statement, values) => {
    let query = queries.get(statement);
    if (query === undefined) {
      const text = textFor('postgresql', statement);
      query = Object.freeze({ text, name: options.pooler ? undefined : statement.name, rowMode: 'array', types: POSTGRES_TYPES });
      queries.set(statement, query);
    }
    const config = Object.create(query) as PostgresQuery;
    const parameters = values.map(postgresValue);
    try {
      const result = await onConnection((connection) => connection.query<SqlRow>(config, parameters));
      return result.rows;
    } catch (error) {
      options.onError?.(error);
      throw error;
    }
  };
}

/** PostgreSQL: a connection whose ROLLBACK failed is closed, not returned: its state is unknown. */
export function postgresDatabase(pool: StatementPool, options: PostgresOptions): SqlDatabase {
  const queries = new WeakMap<Statement, PostgresQuery>();
  const giveBack = returnAtTurnEnd();
  return {
    dialect: 'postgresql',
    query: postgresExecutor(lendPerTurn(pool, giveBack, !options.pooler), queries, options),
    async transaction(work) {
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        const result = await work({ query: postgresExecutor((use) => use(client), queries, options) });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
        throw error;
      } finally {
        if (broken) client.release(broken);
        else giveBack(client);
      }
    },
    isUniqueViolation: (error) => error instanceof pg.DatabaseError && error.code === '23505',
  };
}

// The pets table.

export interface PetRepository {
  /** Ascending id, optional status, ids above `after`, at most `limit`. */
  list(query: ListPetsInput): Promise<Pet[]>;
  create(pet: NewPet): Promise<Pet>;
  findById(id: number): Promise<Pet | null>;
}

const PET_COLUMNS = 'id, name, category_id, status';

/**
 * Exported for tests of the query plans. A list is a key range, never OFFSET. The PostgreSQL status
 * list uses a row comparison: a generic plan for `status = $1 AND id > $2` would scan the primary key.
 */
export const PET_STATEMENTS = {
  list: statement('pets_list', `SELECT ${PET_COLUMNS} FROM pets WHERE id > ? ORDER BY id ASC LIMIT ?`),
  listByStatus: statement('pets_list_by_status', `SELECT ${PET_COLUMNS} FROM pets WHERE status = ? AND id > ? ORDER BY id ASC LIMIT ?`, {
    postgresql: `SELECT ${PET_COLUMNS} FROM pets WHERE status = $1 AND (status, id) > ($1, $2) ORDER BY status, id LIMIT $3`,
  }),
  insert: statement('pets_insert', `INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING ${PET_COLUMNS}`),
  byId: statement('pets_by_id', `SELECT ${PET_COLUMNS} FROM pets WHERE id = ?`),
};

function toPet(row: SqlRow): Pet {
  return {
    id: int64FromDatabase(row[0] as bigint),
    name: row[1] as string,
    categoryId: int64FromDatabase(row[2] as bigint),
    status: row[3] as Pet['status'],
  };
}

/** The pets of a session: the database's own (`Database.sql`) or a transaction's. */
export function createPetRepository(session: SqlSession): PetRepository {
  return {
    async list({ limit, status, after = 0 }) {
      const rows = status
        ? await session.query(PET_STATEMENTS.listByStatus, [status, after, limit])
        : await session.query(PET_STATEMENTS.list, [after, limit]);
      return rows.map(toPet);
    },

    async create({ name, categoryId, status = DEFAULT_PET_STATUS }) {
      const [row] = await session.query(PET_STATEMENTS.insert, [name, categoryId, status]);
      if (!row) throw new Error('INSERT … RETURNING returned no row');
      return toPet(row);
    },

    async findById(id) {
      const [row] = await session.query(PET_STATEMENTS.byId, [id]);
      return row ? toPet(row) : null;
    },
  };
}
