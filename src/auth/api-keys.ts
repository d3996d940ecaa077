// The one place that decides whether a request carries a valid `Authorization: Bearer` key: API_KEYS
// (digests compared in constant time) or the api_keys table (by digest). A key is never stored or logged.
// @see docs/security.md "API keys"
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { API_KEY_PREFIX } from '../domain/api-key-shape.js';

export interface ApiKeyIdentity {
  /** Non-secret: `key-<n>` for stored keys, `env-<digest prefix>` for API_KEYS. */
  keyId: string;
}

// RFC 6750: case-insensitive scheme; token68.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

function bearerToken(header: string | undefined): string | null {
  if (header === undefined) return null;
  return BEARER.exec(header)?.[1] ?? null;
}

/** SHA-256 is enough for 256-bit random keys; one-shot `hash` (docs/benchmarks.md, "Figures behind the code's choices"). */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** 32 random bytes, base64url, behind a prefix that makes a leak recognisable. */
export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

export function digestOfHeader(header: string | undefined): string | null {
  const token = bearerToken(header);
  return token === null ? null : hashApiKey(token);
}

export interface ApiKeyVerifier {
  authenticate(authorizationHeader: string | undefined): Promise<ApiKeyIdentity | null>;
  authenticateDigest(digest: string): Promise<ApiKeyIdentity | null>;
  /** authenticateDigest's first step, answered synchronously (no lookup). */
  matchEnvKey(digest: string): ApiKeyIdentity | null;
}

export interface StoredKeys {
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
      // Every env key is compared, so timing tells nothing of which matched.
      let match: ApiKeyIdentity | null = null;
      for (const key of envKeys) {
        if (timingSafeEqual(candidate, key.digest)) match = key.identity;
      }
      return match;
    },

    async authenticateDigest(hash) {
      const match = verifier.matchEnvKey(hash);
      if (match) return match;
      const stored = await options.store?.findActiveByHash(hash);
      return stored ? { keyId: `key-${stored.id}` } : null;
    },
  };
  return verifier;
}
