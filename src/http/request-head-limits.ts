// The size limits of a request's head, set in src/app.ts. The body's limit is a setting
// (BODY_LIMIT_BYTES, src/config.ts); these are fixed and sized so that what our clients send fits:
// createClient (client/src/trpc-client.ts) keeps a batch's URL under CLIENT_MAX_URL_LENGTH.
// @see docs/api.md ("Batches") and docs/decisions.md

/** The request line and all headers together, at most (Node's default, stated). Beyond it: 431. */
export const MAX_REQUEST_HEAD_BYTES = 16 * 1024;

/**
 * The longest one path parameter may be (Fastify's default is 100). tRPC's batch URL
 * `/trpc/pets.get,pets.get,…` is one parameter: as long as the whole head, so no URL Node accepts is
 * refused for its path alone (tRPC's Fastify adapter documentation raises it for the same reason).
 * @alias its own name for the same number, so that each use says which limit it means
 */
export const MAX_PARAM_LENGTH = MAX_REQUEST_HEAD_BYTES;

/** The longest URL createClient sends: half the head's limit, leaving the rest for headers. */
export const CLIENT_MAX_URL_LENGTH = 8 * 1024;

/** The most calls createClient puts in one batched request (a larger batch is split). */
export const CLIENT_MAX_BATCH_ITEMS = 50;
