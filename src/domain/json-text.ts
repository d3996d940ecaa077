// Integers decided by the JSON text, not by JSON.parse's double: the few number tokens that would
// round are rewritten in the text, so tRPC's own handler reads the same (no reviver: it overflows the
// stack). @see docs/decisions.md "Integers in JSON"

/** What a non-integer that would round to an integer reads as: not an integer. */
export const NOT_AN_INTEGER = 0.5;

/** Digits of Number.MAX_VALUE: an integer literal this long may read as Infinity. */
const MAX_FINITE_DIGITS = 309;

const BYTE_ORDER_MARK = 0xfeff;

/** A fraction, an exponent or a long digit run; false for most bodies (a plain JSON.parse). */
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

/** Scans the text once: it may be long. */
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
  // The value is (the digits without trailing zeros) × 10^(trailingZeros − fractionDigits + exponent).
  return trailingZeros - fractionDigits + exponent >= 0;
}

function ruledNumber(token: string): string {
  const value = Number(token); // the same double as JSON.parse's
  if (isIntegerText(token)) return Number.isFinite(value) ? token : String(Math.sign(value) * Number.MAX_VALUE);
  return Number.isInteger(value) || !Number.isFinite(value) ? String(NOT_AN_INTEGER) : token;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const isNumberPart = (code: number) => isDigit(code) || code === 0x2e || code === 0x65 || code === 0x45 || code === 0x2b || code === MINUS;

/** Each number token the rule reads otherwise replaced; one pass, no recursion. */
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

/** RFC 8259: JSON is UTF-8; refused (400) rather than stored as U+FFFD. */
export class BodyNotUtf8Error extends Error {
  readonly code = 'BODY_NOT_UTF8';
  readonly statusCode = 400;
  constructor() {
    super('body: is not valid UTF-8');
  }
}

/** Strict; a byte order mark is kept (the surfaces decide about it). */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function bodyText(bytes: Uint8Array): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new BodyNotUtf8Error();
  }
}

/** JSON.parse with the integer rule; text that is not JSON throws JSON.parse's own SyntaxError. */
export function parseJson(text: string): unknown {
  if (!mayRound(text)) return JSON.parse(text);
  const value: unknown = JSON.parse(text); // text that is not JSON fails here, with JSON.parse's own words
  const ruled = ruledJson(text);
  return ruled === text ? value : JSON.parse(ruled);
}

/** For tRPC's handler (plain JSON.parse): `text` itself unless the rule changes a number; leading BOMs kept. */
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

/** Plain decimal digits (query or path) as the API reads them: too long → ±Number.MAX_VALUE. */
export function integerFromDigits(digits: string): number {
  const value = Number(digits);
  return Number.isFinite(value) ? value : Math.sign(value) * Number.MAX_VALUE;
}
