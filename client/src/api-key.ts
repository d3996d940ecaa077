// The one check both clients make of their key, when they are created.

/**
 * The Authorization header for `apiKey`. An empty or missing key (an unset environment variable)
 * is refused at once with a sentence that says so, instead of a client that sends `Bearer undefined`
 * and gets a bare 401 on every call.
 */
export function bearerAuthorization(apiKey: unknown, client: string): string {
  if (typeof apiKey !== 'string' || apiKey.trim() === '') {
    const got = apiKey === undefined ? 'undefined' : JSON.stringify(apiKey);
    throw new TypeError(
      `${client}: apiKey is empty (got ${got}): pass the service's API key, e.g. process.env.ANIMAL_STORE_KEY; ` +
        '`npm run keys -- create --name <name>` in the service makes one',
    );
  }
  return `Bearer ${apiKey}`;
}
