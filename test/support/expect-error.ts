// The error-envelope assertion every REST error test uses (spec section 7).
import { expect } from 'vitest';

export interface ErrorEnvelopeBody {
  code: string;
  message: string;
  status: number;
}

/**
 * Checks that `response` is an error in exactly the envelope `{ code, message, status }`, as
 * application/json, with `status` equal to the HTTP status and no trace of internals, and that
 * its message mentions `mentions` (e.g. the offending field). Returns the body.
 */
export async function expectError(
  response: Response,
  status: number,
  code: string,
  mentions?: string | RegExp,
): Promise<ErrorEnvelopeBody> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const body = JSON.parse(text) as ErrorEnvelopeBody;
  expect(Object.keys(body).sort()).toEqual(['code', 'message', 'status']);
  expect(body).toMatchObject({ code, status });
  expect(typeof body.message).toBe('string');
  expect(body.message.length).toBeGreaterThan(0);
  expect(text).not.toMatch(/\bat .+:\d+:\d+|node_modules|prisma|TRPCError|ZodError|stack/i);
  if (mentions) expect(body.message).toMatch(mentions);
  return body;
}
