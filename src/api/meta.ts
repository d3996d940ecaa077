// The procedures' metadata type, in a module of its own: src/api/trpc.ts gives it to initTRPC, and
// src/api/trpc-internals.ts and the REST route table read it, without importing each other.
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { Deprecation } from '../domain/deprecation.js';

/** Procedure metadata: trpc-to-openapi's `openapi` block plus the conventions it lacks. */
export type ApiMeta = OpenApiMeta<{
  /** The REST status of a success, when it is not 200: 201 for a create, 204 for an answer with no body (none is sent). */
  successStatus?: 201 | 204;
  /**
   * The document's example message of an error status, where the procedure's own words say more
   * than the service's general ones (src/http/openapi-document.ts), e.g. `{ 404: 'No pet has id 42.' }`.
   */
  errorExamples?: Partial<Record<number, string>>;
  /** Marks the operation deprecated; src/http/deprecation-headers.ts announces it on the wire. */
  deprecation?: Deprecation;
  /** A list whose full pages carry a `Link: <…>; rel="next"` header on REST (the context's `nextPage`). */
  nextPageLink?: true;
}>;
