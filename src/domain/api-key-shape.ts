// What an API key looks like, so that one can be recognised wherever it turns up (a request id, a
// query string, a header, an error message) and kept out of the log (src/logger.ts), and the query
// parameters that carry one by name. Keys issued by the service (src/auth/api-keys.ts) are the
// prefix and 32 random bytes in base64url (43 characters).

/** Every key the service issues starts with this: a leaked key is easy to recognise, here and by scanners. */
export const API_KEY_PREFIX = 'ask_';

/**
 * The prefix, literal or percent-encoded (`ask%5F`), then a run of base64url characters long
 * enough to be a key or most of one: shorter runs (`ask_me`) are words, not keys.
 */
const KEY_SHAPED = /ask(?:_|%5f)[A-Za-z0-9_-]{16,}/gi;
/**
 * Query parameters that carry a credential by their name, whatever its shape (a key from API_KEYS
 * has none of its own): RFC 6750's `access_token` and the usual spellings of an API key.
 */
const CREDENTIAL_PARAMETER = /([?&](?:access_token|api_?key|key|token)=)[^&#"\s]+/gi;
const HAS_CREDENTIAL_PARAMETER = /[?&](?:access_token|api_?key|key|token)=/i;

/** Whether `text` holds something shaped like an API key. */
export function looksLikeApiKey(text: string): boolean {
  KEY_SHAPED.lastIndex = 0; // a global expression: test() starts where the last match ended
  return KEY_SHAPED.test(text);
}

/** The prefix's letters in any case: the quick test before KEY_SHAPED, which ignores case too. */
const MAY_HOLD_KEY = /ask/i;

/**
 * `text` with every key-shaped run replaced by `ask_[redacted]`. Text without `ask` (in any case) is
 * returned as is after one search: this runs on every log line.
 */
export function redactApiKeys(text: string): string {
  return MAY_HOLD_KEY.test(text) ? text.replace(KEY_SHAPED, `${API_KEY_PREFIX}[redacted]`) : text;
}

/**
 * A request target (path and query) with the value of every credential query parameter replaced by
 * `[redacted]` (key-shaped text elsewhere in it is left to redactApiKeys, which the log applies to
 * every line). A target without one is returned as is after one search.
 */
export function redactCredentialParameters(target: string): string {
  return HAS_CREDENTIAL_PARAMETER.test(target) ? target.replace(CREDENTIAL_PARAMETER, '$1[redacted]') : target;
}
