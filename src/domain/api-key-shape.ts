// What an API key is: its shape, how a request carries it (`Authorization: Bearer`), its digest, how an
// API_KEYS key is recognised, and how one is kept out of logs wherever it turns up (src/logger.ts). Pure
// rules on node:crypto alone, shared by the verifier (src/auth/api-keys.ts), authentication and the logger.
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

/** The prefix and a run long enough to be (most of) a key; `ask_me` is a word. */
const KEY_SHAPED_SOURCE =
  encoded('a', '[46]1') +
  encoded('s', '[57]3') +
  encoded('k', '[46]b') +
  encoded('_', '5f') +
  `${encoded('[A-Za-z0-9_-]', '2d|3[0-9]|[46][1-9a-f]|[57][0-9a]|5f')}{16,}`;
const HOLDS_KEY = new RegExp(KEY_SHAPED_SOURCE, 'i');
const KEY_SHAPED = new RegExp(KEY_SHAPED_SOURCE, 'gi');
/** Parameters that carry a credential by name (an API_KEYS key has no shape of its own). */
const CREDENTIAL_PARAMETER = /([?&](?:access_token|api_?key|key|token)=)[^&#"\s]+/gi;
const HAS_CREDENTIAL_PARAMETER = /[?&](?:access_token|api_?key|key|token)=/i;

export function looksLikeApiKey(text: string): boolean {
  return HOLDS_KEY.test(text);
}

/**
 * Runs on every log line. A key written without `%` has `k_` or `K_` (its prefix's end): text with none of
 * the three costs three substring searches, no regular expression.
 */
export function redactApiKeys(text: string): string {
  if (!text.includes('%') && !text.includes('k_') && !text.includes('K_')) return text;
  return HOLDS_KEY.test(text) ? text.replace(KEY_SHAPED, `${API_KEY_PREFIX}[redacted]`) : text;
}

/** Credential query parameters' values redacted; other key-shaped text is left to redactApiKeys. */
export function redactCredentialParameters(target: string): string {
  return HAS_CREDENTIAL_PARAMETER.test(target) ? target.replace(CREDENTIAL_PARAMETER, '$1[redacted]') : target;
}
