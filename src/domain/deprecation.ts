// An operation's deprecation, carried in its meta (src/api/meta.ts); the headers: src/http/deprecation-headers.ts.
export interface Deprecation {
  since: Date;
  sunset: Date;
  /** A URL or an absolute path on this server. */
  documentation: string;
}
