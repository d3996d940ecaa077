// Authentication: `Authorization: Bearer <API key>`. This is the only place that decides whether
// a request carries a valid key. Keys come from two places:
//   - API_KEYS (settings): a bootstrap list, compared in constant time against SHA-256 digests;
//   - the api_keys table (`npm run keys`), looked up by the SHA-256 of the presented key.
// A key itself is never stored, logged or kept in memory beyond the request that carries it.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { API_KEY_PREFIX } from '../domain/api-key-shape.js';

/** Who made the request, once the key is verified. Never holds the key itself. */
export interface ApiKeyIdentity {
  /** A stable, non-secret id for the key: `key-<n>` for stored keys, `env-<digest prefix>` for API_KEYS. */
  keyId: string;
}

// RFC 6750: the scheme name is case-insensitive; the token is token68, after one or more spaces.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** The token of a well-formed `Bearer` header, or null when it is missing or malformed. */
function bearerToken(header: string | undefined): string | null {
  if (header === undefined) return null;
  return BEARER.exec(header)?.[1] ?? null;
}

/**
 * The digest a key is stored and looked up by. Keys are 256-bit random, so a fast hash is enough.
 * Node's one-shot `hash`, cheaper than a `createHash` object per key (figure in docs/benchmarks.md).
 */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** A new key: 32 random bytes, base64url, with a prefix that makes a leaked key easy to recognise. */
export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** The digest of the key in an `Authorization` header value, or null when it is missing or malformed. */
export function digestOfHeader(header: string | undefined): string | null {
  const token = bearerToken(header);
  return token === null ? null : hashApiKey(token);
}

export interface ApiKeyVerifier {
  /** The identity behind an `Authorization` header value, or null (missing, malformed, unknown, revoked). */
  authenticate(authorizationHeader: string | undefined): Promise<ApiKeyIdentity | null>;
  /** The identity behind a key's digest (digestOfHeader), or null (unknown, revoked). */
  authenticateDigest(digest: string): Promise<ApiKeyIdentity | null>;
  /**
   * The identity of the API_KEYS key with this digest, or null: the first step of
   * authenticateDigest, answered at once (no lookup), for callers that avoid a promise when they can.
   */
  matchEnvKey(digest: string): ApiKeyIdentity | null;
}

/** Where keys issued with `npm run keys` are found (the api_keys table: api-key-store.ts). */
export interface StoredKeys {
  /** The active (not revoked) key with this digest, noting its use. */
  findActiveByHash(hash: string): Promise<{ id: number } | null>;
}

export function createApiKeyVerifier(options: { envKeys: readonly string[]; store?: StoredKeys }): ApiKeyVerifier {
  const envKeys = options.envKeys.map((key) => {
    const digest = Buffer.from(hashApiKey(key), 'hex');
    return { digest, identity: { keyId: `env-${digest.subarray(0, 4).toString('hex')}` } };
  });
  const verifier: ApiKeyVerifier = {
    async authenticate(header) {
      const digest = digestOfHeader(header);
      return digest === null ? null : verifier.authenticateDigest(digest);
    },

    matchEnvKey(hash) {
      const candidate = Buffer.from(hash, 'hex');
      // Every env key is compared, so the timing tells nothing of which one (if any) matched.
      let match: ApiKeyIdentity | null = null;
      for (const key of envKeys) {
        if (timingSafeEqual(candidate, key.digest)) match = key.identity;
      }
      return match;
    },

    async authenticateDigest(hash) {
      const match = verifier.matchEnvKey(hash);
      if (match) return match;
      // Looked up by digest: no comparison against a secret happens in the database either.
      const stored = await options.store?.findActiveByHash(hash);
      return stored ? { keyId: `key-${stored.id}` } : null;
    },
  };
  return verifier;
}
