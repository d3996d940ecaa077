// What an API key looks like, so one can be kept out of the log wherever it turns up (src/logger.ts).

/** A leaked key is easy to recognise, here and by scanners. */
export const API_KEY_PREFIX = 'ask_';

/** Literal or percent-encoded prefix and a run long enough to be (most of) a key; `ask_me` is a word. */
const KEY_SHAPED = /ask(?:_|%5f)[A-Za-z0-9_-]{16,}/gi;
/** Parameters that carry a credential by name (an API_KEYS key has no shape of its own). */
const CREDENTIAL_PARAMETER = /([?&](?:access_token|api_?key|key|token)=)[^&#"\s]+/gi;
const HAS_CREDENTIAL_PARAMETER = /[?&](?:access_token|api_?key|key|token)=/i;

export function looksLikeApiKey(text: string): boolean {
  KEY_SHAPED.lastIndex = 0; // a global expression: test() starts where the last match ended
  return KEY_SHAPED.test(text);
}

const MAY_HOLD_KEY = /ask/i;

/** Runs on every log line: text without `ask` costs one search. */
export function redactApiKeys(text: string): string {
  return MAY_HOLD_KEY.test(text) ? text.replace(KEY_SHAPED, `${API_KEY_PREFIX}[redacted]`) : text;
}

/** Credential query parameters' values redacted; other key-shaped text is left to redactApiKeys. */
export function redactCredentialParameters(target: string): string {
  return HAS_CREDENTIAL_PARAMETER.test(target) ? target.replace(CREDENTIAL_PARAMETER, '$1[redacted]') : target;
}
