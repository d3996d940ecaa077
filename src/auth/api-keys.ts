// Authentication: `Authorization: Bearer <API key>`, checked against the configured keys.
// This is the only place that decides whether a request carries a valid key; the tRPC middleware
// (src/api/trpc.ts) and the REST hook (src/http/rest-plugin.ts) both ask it.
import { createHash, timingSafeEqual } from 'node:crypto';

/** Who made the request, once the key is verified. Never holds the key itself. */
export interface ApiKeyIdentity {
  /** A stable, non-secret name for the key, e.g. for logs: `env-1` is the first key in API_KEYS. */
  keyId: string;
}

// RFC 6750: the scheme name is case-insensitive; the token is token68, after one or more spaces.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** The token of a well-formed `Bearer` header, or null when it is missing or malformed. */
export function bearerToken(header: string | undefined): string | null {
  if (header === undefined) return null;
  return BEARER.exec(header)?.[1] ?? null;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

export interface ApiKeyVerifier {
  /** The identity behind an `Authorization` header value, or null (missing, malformed or unknown). */
  authenticate(authorizationHeader: string | undefined): ApiKeyIdentity | null;
}

/**
 * Verifies against a fixed list of keys. Keys are held only as SHA-256 digests, and a candidate
 * is compared with every one of them in constant time, so neither the position of a mismatch nor
 * which key matched shows in the timing.
 */
export function createApiKeyVerifier(keys: readonly string[]): ApiKeyVerifier {
  const known = keys.map((key, index) => ({ digest: digest(key), identity: { keyId: `env-${index + 1}` } }));
  return {
    authenticate(header) {
      const token = bearerToken(header);
      if (token === null) return null;
      const candidate = digest(token);
      let match: ApiKeyIdentity | null = null;
      for (const key of known) {
        if (timingSafeEqual(candidate, key.digest)) match = key.identity;
      }
      return match;
    },
  };
}
