// What an API key is: its shape (which the logger redacts wherever it turns up: src/logger.ts), how a request
// carries it (`Authorization: Bearer`), its digest, how an API_KEYS key is recognised. Pure rules on
// node:crypto alone, shared by the verifier (src/auth/api-keys.ts), authentication and the logger.
// @see docs/security.md "API keys"
import { hash, timingSafeEqual } from 'node:crypto';

/** A leaked key is easy to recognise, here and by scanners. */
export const API_KEY_PREFIX = 'ask_';

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

/** The digest of the key an `Authorization` header carries; null when it carries none (absent or malformed). */
export function digestOfHeader(header: string | undefined): string | null {
  const token = bearerToken(header);
  return token === null ? null : hashApiKey(token);
}

/** Recognises the API_KEYS keys by a digest, synchronously (no lookup): the identity of the one it is, or null. */
export function envKeyMatcher(envKeys: readonly string[]): (digest: string) => ApiKeyIdentity | null {
  const keys = envKeys.map((key) => {
    const digest = Buffer.from(hashApiKey(key), 'hex');
    return { digest, identity: { keyId: `env-${digest.subarray(0, 4).toString('hex')}` } };
  });
  return (digest) => {
    const candidate = Buffer.from(digest, 'hex');
    // Every env key is compared, so timing tells nothing of which matched.
    let match: ApiKeyIdentity | null = null;
    for (const key of keys) {
      if (timingSafeEqual(candidate, key.digest)) match = key.identity;
    }
    return match;
  };
}

/**
 * A character literal or percent-encoded up to three times (`%61`, `%2561`, `%252561`), hex in any
 * case; deeper nesting is not followed, so a run of `%2525…` costs linear time.
 */
const encoded = (literal: string, hex: string) => `(?:${literal}|%(?:25){0,2}(?:${hex}))`;

/** The prefix and a run long enough to be (most of) a key; `ask_me` is a word. The logger redacts it (src/logger.ts). */
export const KEY_SHAPED_SOURCE =
  encoded('a', '[46]1') +
  encoded('s', '[57]3') +
  encoded('k', '[46]b') +
  encoded('_', '5f') +
  `${encoded('[A-Za-z0-9_-]', '2d|3[0-9]|[46][1-9a-f]|[57][0-9a]|5f')}{16,}`;
const HOLDS_KEY = new RegExp(KEY_SHAPED_SOURCE, 'i');

export function looksLikeApiKey(text: string): boolean {
  return HOLDS_KEY.test(text);
}
