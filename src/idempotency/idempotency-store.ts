// Idempotent requests (IETF draft "The Idempotency-Key HTTP Header Field"): the first request with
// a key runs and its response is recorded in the same transaction as its effect; a repeat with the
// same key and the same request replays that response and changes nothing; a repeat with another
// request is refused. Records live in the database, so this holds across instances, and expire.
//
// The transaction is the hot-path SQL's (src/db/sql.ts), not Prisma's: the work inside it (a
// create) runs the repository's own statements on the transaction's session, so there is one
// implementation of each operation, inside a transaction or not.
import { createHash } from 'node:crypto';
import { DomainError } from '../domain/domain-errors.js';
import { statement, type SqlDatabase, type SqlSession } from '../db/sql.js';

interface IdempotentCall<T> {
  /** Whose key space the key lives in: the API key's id. */
  scope: string;
  /** The operation, e.g. `createPet`: one key may not be shared by two operations' records. */
  operation: string;
  key: string;
  /** The validated request; its fingerprint decides "same request". */
  request: unknown;
  /**
   * Does the work, inside the transaction that also records its outcome: statements on `session`
   * only, no other I/O (SqlDatabase.transaction says why).
   */
  perform: (session: SqlSession) => Promise<T>;
}

/** What a retry with a key already used for another request is told (422). */
export const KEY_REUSED_MESSAGE = 'Idempotency-Key: was already used with a different request; use a new key for a new request';

export interface IdempotencyStore {
  run<T>(call: IdempotentCall<T>): Promise<{ result: T; replayed: boolean }>;
}

/** How often one instance sweeps expired records away. */
const SWEEP_INTERVAL_MS = 60_000;

/**
 * An Idempotency-Key value: the draft's quoted string, or the bare token most clients send (also
 * the header's `pattern` in the OpenAPI document).
 */
export const KEY_SYNTAX = /^"?([\x21\x23-\x7e]{1,255})"?$/;

/** No Idempotency-Key header: the same frozen answer for every request. */
const NO_KEY: { key?: string; error?: string } = Object.freeze({});

/** The key of a header value, or an error message for a malformed one. */
export function parseIdempotencyKey(header: string | string[] | undefined): { key?: string; error?: string } {
  if (header === undefined) return NO_KEY;
  if (Array.isArray(header)) return { error: 'Idempotency-Key: must be given once' };
  const match = KEY_SYNTAX.exec(header.trim());
  return match ? { key: match[1] } : { error: 'Idempotency-Key: must be 1 to 255 visible ASCII characters' };
}

/** JSON with sorted object keys, so that `{a,b}` and `{b,a}` are the same request. */
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

/** The columns prisma/models.prisma maps for IdempotencyRecord; `key` quoted, being a keyword in SQL. */
const RECORDS = {
  /** The record of a key: fingerprint, response, and whether it is still live at the given time. */
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
      // Two concurrent first requests: both run, the second's record hits the unique index, its
      // transaction (and so its effect) is rolled back, and the retry replays the first.
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
