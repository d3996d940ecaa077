// A caller's error without HTTP or tRPC in it; src/api/errors.ts maps each kind to a status.

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
