// Integers are decided by the JSON text, not by the double JavaScript reads from it (JSON.parse
// reads `1.0000000000000001` as 1). A number whose text is an integer (`1`, `1.0`, `1e2`) is that
// integer, ±Number.MAX_VALUE past a double's range (so the schema says "must be at most …"); any
// other number JavaScript would round to an integer reads as NOT_AN_INTEGER ("must be an integer").
// The rule rewrites those few number tokens in the text, which JSON.parse then reads, so tRPC's own
// handler gets the same text (`withIntegerRule`). Not JSON.parse's reviver: its recursive walk
// overflows the stack on input nested a few thousand levels deep, and tRPC's handler needs text.
// Both surfaces read request JSON here. @see docs/decisions.md, "Integers in JSON"

/** The value a non-integer that JavaScript would round to an integer reads as: not an integer, and JSON can carry it. */
export const NOT_AN_INTEGER = 0.5;

/** Digits of a double's largest finite value (Number.MAX_VALUE ≈ 1.8e308): an integer literal this long may read as Infinity. */
const MAX_FINITE_DIGITS = 309;

const BYTE_ORDER_MARK = 0xfeff;

/**
 * Whether `text` may hold a number that JSON.parse rounds: one with a fraction or an exponent (a
 * digit right before `.`, `e` or `E`), or a run of digits long enough to overflow. False for most
 * request bodies, which are then read by a plain JSON.parse.
 */
function mayRound(text: string): boolean {
  return /\d[.eE]/.test(text) || (text.length >= MAX_FINITE_DIGITS && hasLongDigitRun(text));
}

const isDigit = (code: number) => code >= 0x30 && code <= 0x39;

function hasLongDigitRun(text: string): boolean {
  for (let position = 0, run = 0; position < text.length; position++) {
    run = isDigit(text.charCodeAt(position)) ? run + 1 : 0;
    if (run === MAX_FINITE_DIGITS) return true;
  }
  return false;
}

/** Whether a JSON number's text denotes a mathematical integer (scans the text once: it may be long). */
export function isIntegerText(text: string): boolean {
  let position = text.charCodeAt(0) === 0x2d ? 1 : 0; // '-'
  let fractionDigits = 0;
  let lastNonZero = -1; // the index among the digits of the last one that is not 0
  let digitsSeen = 0;
  let inFraction = false;
  for (; position < text.length; position++) {
    const code = text.charCodeAt(position);
    if (isDigit(code)) {
      if (code !== 0x30) lastNonZero = digitsSeen;
      digitsSeen++;
      if (inFraction) fractionDigits++;
    } else if (code === 0x2e) {
      inFraction = true; // '.'
    } else {
      break; // 'e' or 'E'
    }
  }
  if (lastNonZero === -1) return true; // zero, however written
  const exponent = position < text.length ? Number(text.slice(position + 1)) : 0; // ±Infinity when absurdly long
  const trailingZeros = digitsSeen - 1 - lastNonZero;
  // The value is (the digits without their trailing zeros) × 10^(trailingZeros − fractionDigits + exponent).
  return trailingZeros - fractionDigits + exponent >= 0;
}

/** A number token as the API reads it: the token itself, or the text of the value that stands for it. */
function ruledNumber(token: string): string {
  const value = Number(token); // the same double as JSON.parse's
  if (isIntegerText(token)) return Number.isFinite(value) ? token : String(Math.sign(value) * Number.MAX_VALUE);
  return Number.isInteger(value) || !Number.isFinite(value) ? String(NOT_AN_INTEGER) : token;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
/** Characters of a JSON number after its first: digits, `.`, `e`, `E`, `+`, `-`. */
const isNumberPart = (code: number) => isDigit(code) || code === 0x2e || code === 0x65 || code === 0x45 || code === 0x2b || code === MINUS;

/**
 * Valid JSON text with each number token the rule reads otherwise replaced (nearly always `json`
 * itself). Outside strings, a JSON number starts with `-` or a digit and nothing else does. One
 * pass, no recursion, whatever the nesting.
 */
function ruledJson(json: string): string {
  let parts: string[] | null = null;
  let copied = 0;
  for (let position = 0; position < json.length;) {
    const code = json.charCodeAt(position);
    if (code === QUOTE) {
      for (position++; position < json.length; position++) {
        const inString = json.charCodeAt(position);
        if (inString === BACKSLASH) position++;
        else if (inString === QUOTE) break;
      }
      position++;
    } else if (code === MINUS || isDigit(code)) {
      const start = position;
      for (position++; position < json.length && isNumberPart(json.charCodeAt(position)); position++);
      const token = json.slice(start, position);
      const ruled = ruledNumber(token);
      if (ruled !== token) {
        (parts ??= []).push(json.slice(copied, start), ruled);
        copied = position;
      }
    } else {
      position++;
    }
  }
  return parts === null ? json : parts.join('') + json.slice(copied);
}

/**
 * A request body's bytes that are not UTF-8 (RFC 8259: JSON text is UTF-8). Node's own decoding
 * would read each bad byte as U+FFFD and the service would store that; both surfaces refuse it
 * instead (400, `body: is not valid UTF-8`).
 */
export class BodyNotUtf8Error extends Error {
  readonly code = 'BODY_NOT_UTF8';
  readonly statusCode = 400;
  constructor() {
    super('body: is not valid UTF-8');
  }
}

/** Strict UTF-8: bad bytes, overlong forms and encoded surrogates throw; a byte order mark is kept (the surfaces decide about it). */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A request body's text, decoded from its bytes; throws BodyNotUtf8Error for bytes that are not UTF-8. */
export function bodyText(bytes: Uint8Array): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new BodyNotUtf8Error();
  }
}

/** JSON.parse with the integer rule. Throws JSON.parse's own SyntaxError for text that is not JSON. */
export function parseJson(text: string): unknown {
  if (!mayRound(text)) return JSON.parse(text);
  const value: unknown = JSON.parse(text); // text that is not JSON fails here, with JSON.parse's own words
  const ruled = ruledJson(text);
  return ruled === text ? value : JSON.parse(ruled);
}

/**
 * The same JSON text with the integer rule applied, for a parser that is not ours (tRPC's handler
 * reads JSON with a plain JSON.parse): `text` itself when the rule changes nothing (nearly always),
 * or when it is not JSON (the parser gives its own error); else `text` with the changed numbers
 * rewritten, after the same leading byte order marks (tRPC's decoding drops them).
 */
export function withIntegerRule(text: string): string {
  if (!mayRound(text)) return text;
  let start = 0;
  while (text.charCodeAt(start) === BYTE_ORDER_MARK) start++;
  const json = text.slice(start);
  try {
    JSON.parse(json);
  } catch {
    return text;
  }
  const ruled = ruledJson(json);
  return ruled === json ? text : text.slice(0, start) + ruled;
}

/**
 * An integer written in plain decimal digits (a query string's or a path's, already checked to be
 * `-?\d+`), as the API reads it: its value, or ±Number.MAX_VALUE when it is too long for a double,
 * so the schema's range check speaks ("must be at most …").
 */
export function integerFromDigits(digits: string): number {
  const value = Number(digits);
  return Number.isFinite(value) ? value : Math.sign(value) * Number.MAX_VALUE;
}
