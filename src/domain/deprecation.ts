// An operation's deprecation: when it was deprecated, when it goes away, and where its replacement
// is documented. Procedures carry it in their meta (ApiMeta, src/api/meta.ts); src/http/deprecation-headers.ts says
// how it is announced on the wire.
export interface Deprecation {
  /** When the operation became deprecated. */
  since: Date;
  /** When it will be removed. */
  sunset: Date;
  /** Where its replacement is documented (a URL or an absolute path on this server). */
  documentation: string;
}
