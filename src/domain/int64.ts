// int64 ids are JSON numbers, so only up to 2^53 − 1: a larger one is refused (400), never rounded.
// The columns are 64-bit. @see docs/decisions.md
import { z } from 'zod';
import { integerMessages } from './validation-messages.js';

const messages = integerMessages({ min: 1, max: Number.MAX_SAFE_INTEGER, maxLabel: `${Number.MAX_SAFE_INTEGER} (2^53 − 1)` });

export const int64Id = () =>
  z.int({ error: messages }).min(1, { error: messages }).max(Number.MAX_SAFE_INTEGER, { error: messages }).meta({ format: 'int64' });

/** A bigint or number (SQLite) or decimal text (PostgreSQL) as the API's number. */
export function int64FromDatabase(value: bigint | number | string): number {
  const number = Number(value);
  if (!Number.isSafeInteger(number)) throw new RangeError(`int64 value ${value} is outside the API's range`);
  return number;
}
