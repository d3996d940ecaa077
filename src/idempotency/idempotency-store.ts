// Idempotent requests (IETF draft "The Idempotency-Key HTTP Header Field"): the first request with
// a key runs and its response is recorded in the same transaction as its effect; a repeat with the
// same key and the same request replays that response and changes nothing; a repeat with another
// request is refused. Records live in the database, so this holds across instances, and expire.
import { createHash } from 'node:crypto';
import { TRPCError } from '@trpc/server';
import type { PrismaClient } from '../db/database.js';

export type TransactionClient = Parameters<Parameters<PrismaClient['$transaction']>[0]>[0];

export interface IdempotentCall<T> {
  /** Whose key space the key lives in: the API key's id. */
  scope: string;
  /** The operation, e.g. `createPet`: one key may not be shared by two operations' records. */
  operation: string;
  key: string;
  /** The validated request; its fingerprint decides "same request". */
  request: unknown;
  /** Does the work, inside the transaction that also records its outcome. */
  perform: (tx: TransactionClient) => Promise<T>;
}

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

/** The key of a header value, or an error message for a malformed one. */
export function parseIdempotencyKey(header: string | string[] | undefined): { key?: string; error?: string } {
  if (header === undefined) return {};
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

function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: string }).code === 'P2002';
}

export function createIdempotencyStore(prisma: PrismaClient, ttlMs: number, now: () => Date = () => new Date()): IdempotencyStore {
  let lastSweep = 0;

  async function sweep(at: Date): Promise<void> {
    if (at.getTime() - lastSweep < SWEEP_INTERVAL_MS) return;
    lastSweep = at.getTime();
    await prisma.idempotencyRecord.deleteMany({ where: { expiresAt: { lte: at } } });
  }

  return {
    async run({ scope, operation, key, request, perform }) {
      const fingerprint = createHash('sha256').update(canonicalJson(request)).digest('hex');
      const where = { scope_operation_key: { scope, operation, key } };
      // Two concurrent first requests: both run, the second's record hits the unique index, its
      // transaction (and so its effect) is rolled back, and the retry replays the first.
      for (let attempt = 1; ; attempt++) {
        const at = now();
        try {
          const outcome = await prisma.$transaction(async (tx) => {
            const existing = await tx.idempotencyRecord.findUnique({ where });
            if (existing && existing.expiresAt > at) {
              if (existing.fingerprint !== fingerprint) {
                throw new TRPCError({
                  code: 'UNPROCESSABLE_CONTENT',
                  message: 'Idempotency-Key: was already used with a different request; use a new key for a new request',
                });
              }
              return { result: JSON.parse(existing.response), replayed: true };
            }
            if (existing) await tx.idempotencyRecord.delete({ where });
            const result = await perform(tx);
            await tx.idempotencyRecord.create({
              data: { scope, operation, key, fingerprint, response: JSON.stringify(result), expiresAt: new Date(at.getTime() + ttlMs) },
            });
            return { result, replayed: false };
          });
          await sweep(at);
          return outcome;
        } catch (error) {
          if (attempt < 3 && isUniqueViolation(error)) continue;
          throw error;
        }
      }
    },
  };
}
