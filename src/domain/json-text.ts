// Integers are decided by the JSON text, not by the double JavaScript reads from it. Every number
// of this API is an integer (`integer` in the OpenAPI document), and JSON.parse rounds:
// `0.99999999999999999999` and `1.0000000000000001` both read as 1, `1e-400` as 0, a 309-digit
// integer as Infinity. Here a number's own text (JSON.parse's reviver `context.source`, Node ≥ 22)
// says what it is:
//   - a mathematical integer (`1`, `1.0`, `1e2`, `-0`, as JSON Schema's `type: integer` counts
//     them) is its value; one too large for a double (Infinity) reads as ±Number.MAX_VALUE, an
//     integer out of every range, so the schema says "must be at most …", not "not an integer";
//   - any other number that JavaScript would round to an integer (or to Infinity) reads as
//     NOT_AN_INTEGER, so the schema refuses it exactly as it refuses 1.5: "must be an integer".
// Both surfaces read request JSON here: REST bodies, tRPC inputs (query and body), and the text
// handed to tRPC's own handler, which parses JSON itself (`withIntegerRule`).
// @see docs/decisions.md, "Integers in JSON"

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

/** A number as the API reads it, from its value and its JSON text. */
function numberByText(value: number, source: string): number {
  if (isIntegerText(source)) return Number.isFinite(value) ? value : Math.sign(value) * Number.MAX_VALUE;
  return Number.isInteger(value) || !Number.isFinite(value) ? NOT_AN_INTEGER : value;
}

interface ReviverContext {
  /** The source text of a primitive value (JSON.parse source text access, Node ≥ 22). */
  source?: string;
}

function reviveNumber(_key: string, value: unknown, context?: ReviverContext): unknown {
  return typeof value === 'number' && context?.source !== undefined ? numberByText(value, context.source) : value;
}

/** JSON.parse, typed with the reviver's third argument (TypeScript's lib does not declare it yet). */
const parseWithReviver = JSON.parse as (
  text: string,
  reviver: (key: string, value: unknown, context?: ReviverContext) => unknown,
) => unknown;

/** JSON.parse with the integer rule. Throws JSON.parse's own SyntaxError for text that is not JSON. */
export function parseJson(text: string): unknown {
  return mayRound(text) ? parseWithReviver(text, reviveNumber) : JSON.parse(text);
}

/**
 * The same JSON text with the integer rule applied, for a parser that is not ours (tRPC's handler
 * reads JSON with a plain JSON.parse): `text` itself when the rule changes nothing (nearly always),
 * or when it is not JSON (the parser gives its own error); else the JSON of the value as the rule
 * reads it, after the same leading byte order marks (tRPC's decoding drops them). JSON.stringify
 * writes -0 as 0, which no range check tells apart.
 */
export function withIntegerRule(text: string): string {
  if (!mayRound(text)) return text;
  let start = 0;
  while (text.charCodeAt(start) === BYTE_ORDER_MARK) start++;
  let changed = false;
  let value: unknown;
  try {
    value = parseWithReviver(text.slice(start), (key, parsed, context) => {
      const revived = reviveNumber(key, parsed, context);
      if (!Object.is(revived, parsed)) changed = true;
      return revived;
    });
  } catch {
    return text;
  }
  return changed ? text.slice(0, start) + JSON.stringify(value) : text;
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
