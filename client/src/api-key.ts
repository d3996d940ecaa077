// The one check both clients make of their key, when they are created.

/**
 * The Authorization header for `apiKey`, or none for `null`: a server in front of the service (a
 * web app's own server or its development proxy) adds the header, so the browser holds no key.
 * An empty or missing key (an unset variable, an empty form field) is refused at once with a
 * sentence an app can show, instead of a client that sends `Bearer undefined` and gets a bare 401
 * on every call.
 */
export function bearerAuthorization(apiKey: unknown, client: string): string | null {
  if (apiKey === null) return null;
  if (typeof apiKey !== 'string' || apiKey.trim() === '') {
    const got = apiKey === undefined ? 'undefined' : JSON.stringify(apiKey);
    throw new TypeError(
      `${client}: apiKey is empty (got ${got}): give the service's API key (\`npm run keys -- create --name <name>\` in the ` +
        'service makes one), or null when a server in front of the service adds it',
    );
  }
  return `Bearer ${apiKey}`;
}
