// The size limits of a request's head (set in src/app.ts), fixed so that what our clients send fits:
// createClient (client/src/trpc-client.ts) keeps a batch's URL under CLIENT_MAX_URL_LENGTH.

/** The request line and all headers together, at most (Node's default, stated). Beyond it: 431. */
export const MAX_REQUEST_HEAD_BYTES = 16 * 1024;

/**
 * The longest path parameter (Fastify's: 100). tRPC's batch URL `/trpc/a,b,…` is one, and no URL Node accepts is refused for it.
 * @alias its own name for the same number, so that each use says which limit it means (knip reads this tag)
 */
export const MAX_PARAM_LENGTH = MAX_REQUEST_HEAD_BYTES;

/** The longest URL createClient sends: half the head's limit, leaving the rest for headers. */
export const CLIENT_MAX_URL_LENGTH = 8 * 1024;

/** The most calls createClient puts in one batched request (a larger batch is split). */
export const CLIENT_MAX_BATCH_ITEMS = 50;
