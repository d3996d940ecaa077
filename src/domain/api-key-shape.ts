// What an API key looks like, so one can be kept out of the log wherever it turns up (src/logger.ts).

/** A leaked key is easy to recognise, here and by scanners. */
export const API_KEY_PREFIX = 'ask_';

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

const MAY_HOLD_KEY = /ask/i;

/** Runs on every log line: text with neither `%` nor `ask` costs two quick searches. */
export function redactApiKeys(text: string): string {
  if (!text.includes('%') && !MAY_HOLD_KEY.test(text)) return text;
  return HOLDS_KEY.test(text) ? text.replace(KEY_SHAPED, `${API_KEY_PREFIX}[redacted]`) : text;
}

/** Credential query parameters' values redacted; other key-shaped text is left to redactApiKeys. */
export function redactCredentialParameters(target: string): string {
  return HAS_CREDENTIAL_PARAMETER.test(target) ? target.replace(CREDENTIAL_PARAMETER, '$1[redacted]') : target;
}
