// The api_keys table: issuing, listing, revoking (`npm run keys`) and the per-request lookup.
// Nothing is cached, so a revocation holds on every instance at the key's next request.
import type Sqlite from 'better-sqlite3';
import type { PrismaClient } from '../db/database.js';
import { hashApiKey } from '../domain/api-key-shape.js';
import { generateApiKey, type StoredKeys } from './api-keys.js';

/** last_used_at written at most this often per key: a request must not cost a write. */
const LAST_USED_RESOLUTION_MS = 60_000;

export interface ApiKeyStoreOptions {
  sqlite?: Sqlite.Database | null;
  now?: () => Date;
  /** Told when the last_used_at write failed: bookkeeping beside the request, never failing it. */
  onBookkeepingError?: (error: unknown) => void;
}

interface ApiKeyRecord {
  id: number;
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export interface ApiKeyStore extends StoredKeys {
  /** The returned `key` is the only copy there will ever be. */
  create(name: string): Promise<{ key: string; record: ApiKeyRecord }>;
  list(): Promise<ApiKeyRecord[]>;
  revoke(name: string): Promise<boolean>;
  countActive(): Promise<number>;
}

export class DuplicateKeyNameError extends Error {
  override name = 'DuplicateKeyNameError';
}

const RECORD_FIELDS = { id: true, name: true, createdAt: true, lastUsedAt: true, revokedAt: true } as const;

type KeyLookup = (hash: string) => Promise<{ id: number; revokedAt: Date | null; lastUsedAt: Date | null } | null>;

/** A statement on our own SQLite connection: a Prisma lookup costs per request (docs/benchmarks.md). */
function sqliteKeyLookup(db: Sqlite.Database): KeyLookup {
  const byHash = db
    .prepare<[string], [bigint, string | null, string | null]>('SELECT id, revoked_at, last_used_at FROM api_keys WHERE hash = ?')
    .raw();
  const date = (text: string | null) => (text === null ? null : new Date(text));
  return async (hash) => {
    const row = byHash.get(hash);
    return row ? { id: Number(row[0]), revokedAt: date(row[1]), lastUsedAt: date(row[2]) } : null;
  };
}

export function createApiKeyStore(prisma: PrismaClient, options: ApiKeyStoreOptions = {}): ApiKeyStore {
  const now = options.now ?? (() => new Date());
  const onBookkeepingError = options.onBookkeepingError ?? (() => {});
  const writing = new Set<number>();
  const noteUse = (id: number, at: Date) => {
    if (writing.has(id)) return;
    writing.add(id);
    prisma.apiKey
      .update({ where: { id }, data: { lastUsedAt: at } })
      .catch(onBookkeepingError)
      .finally(() => writing.delete(id));
  };
  const lookup: KeyLookup = options.sqlite
    ? sqliteKeyLookup(options.sqlite)
    : (hash) => prisma.apiKey.findUnique({ where: { hash }, select: { id: true, revokedAt: true, lastUsedAt: true } });
  return {
    async findActiveByHash(hash) {
      const key = await lookup(hash);
      if (!key || key.revokedAt) return null;
      const at = now();
      if (!key.lastUsedAt || at.getTime() - key.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS) {
        noteUse(key.id, at);
      }
      return { id: key.id };
    },

    async create(name) {
      if (await prisma.apiKey.findUnique({ where: { name }, select: { id: true } })) {
        throw new DuplicateKeyNameError(`A key named "${name}" exists already (names are never reused).`);
      }
      const key = generateApiKey();
      const record = await prisma.apiKey.create({ data: { name, hash: hashApiKey(key) }, select: RECORD_FIELDS });
      return { key, record };
    },

    list: () => prisma.apiKey.findMany({ select: RECORD_FIELDS, orderBy: { id: 'asc' } }),

    async revoke(name) {
      const { count } = await prisma.apiKey.updateMany({ where: { name, revokedAt: null }, data: { revokedAt: now() } });
      return count > 0;
    },

    countActive: () => prisma.apiKey.count({ where: { revokedAt: null } }),
  };
}
