// What an API key looks like, so that one can be recognised wherever it turns up (a request id, a
// query string, a header, an error message) and kept out of the log (src/logger.ts). Keys issued by
// the service (src/auth/api-keys.ts) are the prefix and 32 random bytes in base64url (43 characters).

/** Every key the service issues starts with this: a leaked key is easy to recognise, here and by scanners. */
export const API_KEY_PREFIX = 'ask_';

/**
 * The prefix, literal or percent-encoded (`ask%5F`), then a run of base64url characters long
 * enough to be a key or most of one: shorter runs (`ask_me`) are words, not keys.
 */
const KEY_SHAPED = /ask(?:_|%5f)[A-Za-z0-9_-]{16,}/gi;
/** How every credential parameter's name ends: what a line must hold before it is looked at closer. */
const CREDENTIAL_NAME_END = /(?:key|token)=/i;

/**
 * Query parameters that carry a credential by their name, whatever its shape (a key from API_KEYS
 * has none of its own): RFC 6750's `access_token` and the usual spellings of an API key.
 */
const CREDENTIAL_PARAMETER = /([?&](?:access_token|api_?key|key|token)=)[^&#"\s]+/gi;

/** Whether `text` holds something shaped like an API key. */
export function looksLikeApiKey(text: string): boolean {
  KEY_SHAPED.lastIndex = 0; // a global expression: test() starts where the last match ended
  return KEY_SHAPED.test(text);
}

/**
 * `text` with every key-shaped run, and the value of every credential query parameter, replaced by
 * `[redacted]`. Text without `ask` and without `key=` or `token=` (any case) is returned as is
 * after a few plain searches: this runs on every log line.
 */
export function redactApiKeys(text: string): string {
  const keyShaped = text.includes('ask');
  const parameter = text.includes('=') && CREDENTIAL_NAME_END.test(text);
  if (!keyShaped && !parameter) return text;
  let redacted = text;
  if (keyShaped) redacted = redacted.replace(KEY_SHAPED, `${API_KEY_PREFIX}[redacted]`);
  if (parameter) redacted = redacted.replace(CREDENTIAL_PARAMETER, '$1[redacted]');
  return redacted;
}
