// How validation problems read, for the person who sent the request; the envelope prefixes the field: "name: is required".

/** A type error that says "is required" when the field is absent and "must be …" otherwise. */
export function expected(what: string) {
  return (issue: { input?: unknown; code?: string }) => (issue.input === undefined ? 'is required' : `must be ${what}`);
}

/** For z.int(), whose own ±(2^53 − 1) check fires beside .min()/.max(): all in terms of the field's bounds. */
export function integerMessages(bounds: { min: number; max: number; maxLabel?: string }) {
  const requiredOrInteger = expected('an integer');
  return (issue: { input?: unknown; code?: string }) =>
    issue.code === 'too_big'
      ? `must be at most ${bounds.maxLabel ?? bounds.max}`
      : issue.code === 'too_small'
        ? `must be at least ${bounds.min}`
        : requiredOrInteger(issue);
}
