// The deprecation convention: an operation whose procedure carries `deprecation` meta is marked
// `deprecated: true` in the OpenAPI document and answers every request (errors included) with
//   Deprecation: @<unix seconds>   (RFC 9745: when it was deprecated)
//   Sunset: <HTTP date>            (RFC 8594: when it goes away)
//   Link: <documentation>; rel="deprecation"
export interface Deprecation {
  /** When the operation became deprecated. */
  since: Date;
  /** When it will be removed. */
  sunset: Date;
  /** Where its replacement is documented (a URL or an absolute path on this server). */
  documentation: string;
}

export function deprecationHeaders(deprecation: Deprecation): Record<string, string> {
  return {
    deprecation: `@${Math.floor(deprecation.since.getTime() / 1000)}`,
    sunset: deprecation.sunset.toUTCString(),
    link: `<${deprecation.documentation}>; rel="deprecation"`,
  };
}
