// Idempotency-Key (IETF draft): the first request's response is recorded in the transaction of its
// effect; a repeat replays it, another request with the key is refused. @see docs/security.md "Idempotent creates"
import { createHash } from 'node:crypto';
import { DomainError } from '../domain/domain-errors.js';
import { statement, type SqlDatabase, type SqlSession } from '../db/sql.js';

interface IdempotentCall<T> {
  scope: string;
  /** One key may not be shared by two operations' records. */
  operation: string;
  key: string;
  request: unknown;
  /** Runs in the recording transaction: statements on `session` only (SqlDatabase.transaction). */
  perform: (session: SqlSession) => Promise<T>;
}

export const KEY_REUSED_MESSAGE = 'Idempotency-Key: was already used with a different request; use a new key for a new request';

export interface IdempotencyStore {
  run<T>(call: IdempotentCall<T>): Promise<{ result: T; replayed: boolean }>;
}

const SWEEP_INTERVAL_MS = 60_000;

/** The draft's quoted string, or the bare token most clients send (the document's `pattern` too). */
export const KEY_SYNTAX = /^"?([\x21\x23-\x7e]{1,255})"?$/;

const NO_KEY: { key?: string; error?: string } = Object.freeze({});

export function parseIdempotencyKey(header: string | string[] | undefined): { key?: string; error?: string } {
  if (header === undefined) return NO_KEY;
  if (Array.isArray(header)) return { error: 'Idempotency-Key: must be given once' };
  const match = KEY_SYNTAX.exec(header.trim());
  return match ? { key: match[1] } : { error: 'Idempotency-Key: must be 1 to 255 visible ASCII characters' };
}

/** Sorted keys, so `{a,b}` and `{b,a}` are the same request. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** `key` is quoted: a keyword in SQL. */
const RECORDS = {
  find: statement(
    'idempotency_find',
    'SELECT fingerprint, response, expires_at > ? FROM idempotency_records WHERE scope = ? AND operation = ? AND "key" = ?',
  ),
  delete: statement('idempotency_delete', 'DELETE FROM idempotency_records WHERE scope = ? AND operation = ? AND "key" = ?'),
  insert: statement(
    'idempotency_insert',
    'INSERT INTO idempotency_records (scope, operation, "key", fingerprint, response, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  ),
  sweep: statement('idempotency_sweep', 'DELETE FROM idempotency_records WHERE expires_at <= ?'),
};

export function createIdempotencyStore(sql: SqlDatabase, ttlMs: number, now: () => Date = () => new Date()): IdempotencyStore {
  let lastSweep = 0;

  async function sweep(at: Date): Promise<void> {
    if (at.getTime() - lastSweep < SWEEP_INTERVAL_MS) return;
    lastSweep = at.getTime();
    await sql.query(RECORDS.sweep, [at]);
  }

  return {
    async run<T>({ scope, operation, key, request, perform }: IdempotentCall<T>) {
      const fingerprint = createHash('sha256').update(canonicalJson(request)).digest('hex');
      const id = [scope, operation, key];
      // Concurrent first requests: the second's record hits the unique index, rolls back, and replays the first.
      for (let attempt = 1; ; attempt++) {
        const at = now();
        try {
          const outcome = await sql.transaction(async (tx) => {
            const [existing] = await tx.query(RECORDS.find, [at, ...id]);
            if (existing && Boolean(existing[2])) {
              if (existing[0] !== fingerprint) {
                throw new DomainError('unprocessable', KEY_REUSED_MESSAGE);
              }
              return { result: JSON.parse(existing[1] as string) as T, replayed: true };
            }
            if (existing) await tx.query(RECORDS.delete, id);
            const result = await perform(tx);
            await tx.query(RECORDS.insert, [...id, fingerprint, JSON.stringify(result), at, new Date(at.getTime() + ttlMs)]);
            return { result, replayed: false };
          });
          await sweep(at);
          return outcome;
        } catch (error) {
          if (attempt < 3 && sql.isUniqueViolation(error)) continue;
          throw error;
        }
      }
    },
  };
}
