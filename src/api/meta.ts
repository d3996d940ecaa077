// The procedures' metadata type, in a module of its own: src/api/trpc.ts gives it to initTRPC, and
// src/api/trpc-internals.ts and the REST route table read it, without importing each other.
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { Deprecation } from '../domain/deprecation.js';

/** Procedure metadata: trpc-to-openapi's `openapi` block plus the conventions it lacks. */
export type ApiMeta = OpenApiMeta<{
  /** The REST status of a success, when it is not 200 (e.g. 201 for a create). */
  successStatus?: 201;
  /** Marks the operation deprecated; src/http/deprecation-headers.ts announces it on the wire. */
  deprecation?: Deprecation;
  /** A list whose full pages carry a `Link: <…>; rel="next"` header on REST (the context's `nextPage`). */
  nextPageLink?: true;
}>;
