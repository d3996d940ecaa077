// A bounded storm of creates against a real server: each request on its own connection, so a
// refused connection and a failed request can be told apart. 127.0.0.1 only; it stops by itself.
import { request } from 'node:http';

export type Outcome = { name: string; status: number; body: string; replayed: boolean } | { name: string; error: string };

/** One POST /v1/pets with a fresh connection. */
function createPet(baseUrl: string, apiKey: string, name: string, headers: Record<string, string> = {}): Promise<Outcome> {
  const url = new URL('/v1/pets', baseUrl);
  const body = JSON.stringify({ name, categoryId: 1 });
  return new Promise((resolve) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent: false,
        headers: {
          authorization: `Bearer ${apiKey}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () =>
          resolve({ name, status: res.statusCode!, body: text, replayed: res.headers['idempotent-replayed'] === 'true' }),
        );
        res.on('error', (error: NodeJS.ErrnoException) => resolve({ name, error: error.code ?? error.message }));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ name, error: error.code ?? error.message }));
    req.end(body);
  });
}

/**
 * Keeps `concurrency` creates in flight, names `<prefix>-<n>`, until `stop()` returns true or a
 * worker meets a refused connection, or `maxRequests` is reached. Returns every outcome.
 */
export async function storm(options: {
  baseUrl: string;
  apiKey: string;
  prefix: string;
  concurrency: number;
  maxRequests: number;
  stop: () => boolean;
  onOutcome?: (outcome: Outcome, outcomes: Outcome[]) => void;
}): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  let next = 0;
  const worker = async () => {
    while (!options.stop() && next < options.maxRequests) {
      const outcome = await createPet(options.baseUrl, options.apiKey, `${options.prefix}-${next++}`);
      outcomes.push(outcome);
      options.onOutcome?.(outcome, outcomes);
      if ('error' in outcome && outcome.error === 'ECONNREFUSED') return;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return outcomes;
}
