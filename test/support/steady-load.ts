// Steady load through a balancer, as a few well-behaved clients make it: each client one kept-alive
// connection (an Agent with one socket), alternating a create and a list (REST) or listing through
// /trpc, with a short pause between requests. Bounded in count and in time; every exchange is kept,
// with what a test needs to judge it (status, content type, Retry-After, body).
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

type Call = 'create' | 'list' | 'trpc-list';

export interface Exchange {
  client: number;
  call: Call;
  /** Times in ms (Date.now()): when it was sent, when its answer (or failure) came. */
  sentAt: number;
  doneAt: number;
  status?: number;
  /** A failure without an answer: a reset, a refused connection, a timeout. */
  error?: string;
  contentType?: string;
  retryAfter?: string;
  body: string;
}

export interface LoadOptions {
  baseUrl: string;
  apiKey: string;
  /** Clients alternating REST creates and lists. */
  restClients: number;
  /** Clients listing through /trpc (tRPC's GET query). */
  trpcClients?: number;
  /** The most requests of each client, and the longest the load may last, whatever `stop` does. */
  maxRequestsPerClient: number;
  maxMs: number;
  /** The pause between one client's requests. */
  pauseMs?: number;
  /** Creates of clients at these indexes carry an Idempotency-Key (their own, one per create). */
  keyedCreateClients?: number[];
}

export interface Load {
  exchanges: Exchange[];
  /** Ends the load; resolves with every exchange once each client's last request is done. */
  stop(): Promise<Exchange[]>;
}

const PATHS: Record<Call, string> = {
  create: '/v1/pets',
  list: '/v1/pets?limit=5',
  'trpc-list': `/trpc/pets.list?input=${encodeURIComponent(JSON.stringify({ limit: 5 }))}`,
};

function send(agent: Agent, baseUrl: string, apiKey: string, client: number, call: Call, name: string, keyed: boolean): Promise<Exchange> {
  const url = new URL(PATHS[call], baseUrl);
  const body = call === 'create' ? JSON.stringify({ name, categoryId: 1 }) : undefined;
  const sentAt = Date.now();
  return new Promise((resolve) => {
    const failed = (error: NodeJS.ErrnoException) =>
      resolve({ client, call, sentAt, doneAt: Date.now(), error: error.code ?? error.message, body: '' });
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: body ? 'POST' : 'GET',
        headers: {
          authorization: `Bearer ${apiKey}`,
          ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
          ...(body && keyed ? { 'idempotency-key': name } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('error', failed);
        res.on('end', () =>
          resolve({
            client,
            call,
            sentAt,
            doneAt: Date.now(),
            status: res.statusCode,
            contentType: res.headers['content-type'],
            retryAfter: res.headers['retry-after'],
            body: text,
          }),
        );
      },
    );
    req.setTimeout(15_000, () => req.destroy(Object.assign(new Error('no answer in 15 s'), { code: 'TIMEOUT' })));
    req.on('error', failed);
    req.end(body);
  });
}

export function startSteadyLoad(options: LoadOptions): Load {
  const exchanges: Exchange[] = [];
  let stopped = false;
  const deadline = Date.now() + options.maxMs;
  const client = async (index: number, calls: Call[]) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let n = 0; n < options.maxRequestsPerClient && !stopped && Date.now() < deadline; n++) {
        const call = calls[n % calls.length]!;
        const keyed = options.keyedCreateClients?.includes(index) ?? false;
        exchanges.push(await send(agent, options.baseUrl, options.apiKey, index, call, `load-${index}-${n}`, keyed));
        await sleep(options.pauseMs ?? 5);
      }
    } finally {
      agent.destroy();
    }
  };
  const clients = [
    ...Array.from({ length: options.restClients }, (_, index) => client(index, ['create', 'list'])),
    ...Array.from({ length: options.trpcClients ?? 0 }, (_, index) => client(options.restClients + index, ['trpc-list'])),
  ];
  const done = Promise.all(clients);
  return {
    exchanges,
    async stop() {
      stopped = true;
      await done;
      return exchanges;
    },
  };
}

/** The ids of the pets whose create was acknowledged (201). */
export function acknowledgedIds(exchanges: Exchange[]): number[] {
  return exchanges.filter((e) => e.call === 'create' && e.status === 201).map((e) => (JSON.parse(e.body) as { id: number }).id);
}

/** Exchanges that are not a success (2xx): failures without an answer, and every other status. */
export function unsuccessful(exchanges: Exchange[]): Exchange[] {
  return exchanges.filter((e) => e.status === undefined || e.status < 200 || e.status > 299);
}
