// How validation problems read. Messages are written for the person who sent the request and
// are prefixed with the field's name when they reach the error envelope: "name: is required".

/** A type error that says "is required" when the field is absent and "must be …" otherwise. */
export function expected(what: string) {
  return (issue: { input?: unknown; code?: string }) => (issue.input === undefined ? 'is required' : `must be ${what}`);
}

/**
 * Messages for z.int(), whose own range check (±(2^53 − 1)) fires beside .min()/.max(): all of
 * them read the same, in terms of the field's real bounds.
 */
export function integerMessages(bounds: { min: number; max: number; maxLabel?: string }) {
  const requiredOrInteger = expected('an integer');
  return (issue: { input?: unknown; code?: string }) =>
    issue.code === 'too_big'
      ? `must be at most ${bounds.maxLabel ?? bounds.max}`
      : issue.code === 'too_small'
        ? `must be at least ${bounds.min}`
        : requiredOrInteger(issue);
}
