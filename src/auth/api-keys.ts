// The verifier of `Authorization: Bearer` keys: API_KEYS (recognised by the domain's constant-time matcher,
// src/domain/api-key-shape.ts) or the api_keys table (by digest); and the generation of new keys. A key is
// never stored or logged.
// @see docs/security.md "API keys"
import { randomBytes } from 'node:crypto';
import { API_KEY_PREFIX, digestOfHeader, envKeyMatcher, type ApiKeyIdentity } from '../domain/api-key-shape.js';

/** 32 random bytes, base64url, behind a prefix that makes a leak recognisable. */
export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
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
  const verifier: ApiKeyVerifier = {
    async authenticate(header) {
      const digest = digestOfHeader(header);
      return digest === null ? null : verifier.authenticateDigest(digest);
    },

    matchEnvKey: envKeyMatcher(options.envKeys),

    async authenticateDigest(hash) {
      const match = verifier.matchEnvKey(hash);
      if (match) return match;
      const stored = await options.store?.findActiveByHash(hash);
      return stored ? { keyId: `key-${stored.id}` } : null;
    },
  };
  return verifier;
}
