// The int64 convention: identifiers (`id`, `categoryId`, `petId`) are `integer, format int64` in
// the contract and plain JSON numbers on the wire. A JavaScript number holds integers exactly only
// up to 2^53 − 1, so that is the range we accept; a larger value is refused with 400 instead of
// being silently rounded (JSON.parse would turn 9007199254740993 into …992). The database columns
// are 64-bit, so the range can grow later without a migration.
import { z } from 'zod';
import { integerMessages } from './validation-messages.js';

const messages = integerMessages({ min: 1, max: Number.MAX_SAFE_INTEGER, maxLabel: `${Number.MAX_SAFE_INTEGER} (2^53 − 1)` });

/** A positive identifier: an integer in 1 … 2^53 − 1, documented as int64. */
export const int64Id = () =>
  z.int({ error: messages }).min(1, { error: messages }).max(Number.MAX_SAFE_INTEGER, { error: messages }).meta({ format: 'int64' });

/**
 * A 64-bit value read from the database (a bigint or number from SQLite, decimal text from
 * PostgreSQL's driver), as the JSON number the API returns.
 */
export function int64FromDatabase(value: bigint | number | string): number {
  const number = Number(value);
  if (!Number.isSafeInteger(number)) throw new RangeError(`int64 value ${value} is outside the API's range`);
  return number;
}
