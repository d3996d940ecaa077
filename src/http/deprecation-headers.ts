// The deprecation convention: an operation whose procedure carries `deprecation` meta is marked
// `deprecated: true` in the OpenAPI document and answers every request (errors included) with
//   Deprecation: @<unix seconds>   (RFC 9745: when it was deprecated)
//   Sunset: <HTTP date>            (RFC 8594: when it goes away)
//   Link: <documentation>; rel="deprecation"
import type { ApiMeta } from '../api/meta.js';
import type { Deprecation } from '../domain/deprecation.js';

function deprecationHeaders(deprecation: Deprecation): Record<string, string> {
  return {
    deprecation: `@${Math.floor(deprecation.since.getTime() / 1000)}`,
    sunset: deprecation.sunset.toUTCString(),
    link: `<${deprecation.documentation}>; rel="deprecation"`,
  };
}

/** The headers of a request naming procedures with these metas (a batch: several): the first deprecated one's, or none. */
export function deprecationHeadersOf(metas: readonly (ApiMeta | undefined)[]): Record<string, string> | null {
  const deprecation = metas.find((meta) => meta?.deprecation)?.deprecation;
  return deprecation ? deprecationHeaders(deprecation) : null;
}
