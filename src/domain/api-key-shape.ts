// What an API key looks like, so that one can be recognised wherever it turns up (a request id, a
// query string, a header, an error message) and kept out of the log (src/logger.ts), and the query
// parameters that carry one by name. Keys issued by the service (src/auth/api-keys.ts) are the
// prefix and 32 random bytes in base64url (43 characters).

/** Every key the service issues starts with this: a leaked key is easy to recognise, here and by scanners. */
export const API_KEY_PREFIX = 'ask_';

/**
 * One character as it may be written in a URL: itself, or percent-encoded once, twice or three
 * times (`%61`, `%2561`, `%252561`), hex digits in either case. `hex` is the encodings' alternatives.
 * Deeper nesting is not followed: a bounded `(?:25)` keeps the search linear on a run of `%2525…`.
 */
const encoded = (literal: string, hex: string) => `(?:${literal}|%(?:25){0,2}(?:${hex}))`;

/**
 * The prefix, each character literal or percent-encoded (`ask_`, `ask%5F`, `%61%73%6B%5F`…), then a
 * run of base64url characters, each literal or percent-encoded, long enough to be a key or most of one:
 * shorter runs (`ask_me`) are words, not keys. Case-insensitive, like a scanner (`ASK_…` too).
 */
const KEY_SHAPED_SOURCE =
  encoded('a', '[46]1') +
  encoded('s', '[57]3') +
  encoded('k', '[46]b') +
  encoded('_', '5f') +
  `${encoded('[A-Za-z0-9_-]', '2d|3[0-9]|[46][1-9a-f]|[57][0-9a]|5f')}{16,}`;
const HOLDS_KEY = new RegExp(KEY_SHAPED_SOURCE, 'i');
const KEY_SHAPED = new RegExp(KEY_SHAPED_SOURCE, 'gi');

/**
 * Query parameters that carry a credential by their name, whatever its shape (a key from API_KEYS
 * has none of its own): RFC 6750's `access_token` and the usual spellings of an API key.
 */
const CREDENTIAL_PARAMETER = /([?&](?:access_token|api_?key|key|token)=)[^&#"\s]+/gi;
const HAS_CREDENTIAL_PARAMETER = /[?&](?:access_token|api_?key|key|token)=/i;

/** Whether `text` holds something shaped like an API key. */
export function looksLikeApiKey(text: string): boolean {
  return HOLDS_KEY.test(text);
}

/** The prefix's letters in any case: with no `%` either, a line cannot hold a key (literal or encoded). */
const MAY_HOLD_KEY = /ask/i;

/**
 * `text` with every key-shaped run replaced by `ask_[redacted]`. This runs on every log line: text
 * with neither `%` nor `ask` (in any case) is returned after two quick searches, other text after
 * one more.
 */
export function redactApiKeys(text: string): string {
  if (!text.includes('%') && !MAY_HOLD_KEY.test(text)) return text;
  return HOLDS_KEY.test(text) ? text.replace(KEY_SHAPED, `${API_KEY_PREFIX}[redacted]`) : text;
}

/**
 * A request target (path and query) with the value of every credential query parameter replaced by
 * `[redacted]` (key-shaped text elsewhere in it is left to redactApiKeys, which the log applies to
 * every line). A target without one is returned as is after one search.
 */
export function redactCredentialParameters(target: string): string {
  return HAS_CREDENTIAL_PARAMETER.test(target) ? target.replace(CREDENTIAL_PARAMETER, '$1[redacted]') : target;
}
