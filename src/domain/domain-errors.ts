// What a service throws when the caller asked for something it cannot have: a plain error with a
// kind, no HTTP or tRPC in it. src/api/errors.ts maps each kind to tRPC's code (and so to the HTTP
// status) in one table; protectedProcedure (src/api/trpc.ts) applies it to whatever a procedure throws.

/** `invalid`: 400; `not_found`: 404; `unprocessable`: 422 (understood, but in conflict with what is stored). */
export type DomainErrorKind = 'invalid' | 'not_found' | 'unprocessable';

export class DomainError extends Error {
  override name = 'DomainError';
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
  ) {
    super(message);
  }
}
