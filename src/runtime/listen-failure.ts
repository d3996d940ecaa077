// One sentence naming the setting, address and remedy when the port cannot be opened, not a stack trace.

export interface Listener {
  setting: 'PORT' | 'METRICS_PORT';
  hostSetting: 'HOST' | 'METRICS_HOST';
  host: string;
  port: number;
}

interface ListenError {
  code?: unknown;
  syscall?: unknown;
  port?: unknown;
  address?: unknown;
}

/** Undefined when `error` is not a failure to take the address. */
export function listenFailureMessage(error: unknown, listeners: readonly Listener[]): string | undefined {
  const { code, syscall, port, address } = (error ?? {}) as ListenError;
  if (syscall !== 'listen' && syscall !== 'bind') return undefined;
  const samePort = listeners.filter((candidate) => candidate.port === port);
  const listener = samePort.find((candidate) => candidate.host === address) ?? samePort[0];
  if (!listener) return undefined;
  const { setting, hostSetting } = listener;
  const host = typeof address === 'string' ? address : listener.host;
  const where = `${host.includes(':') ? `[${host}]` : host}:${String(port)}`;
  switch (code) {
    case 'EADDRINUSE':
      return (
        `Cannot listen on ${where} (${setting}=${String(port)}): another program already uses that port. ` +
        `Stop it, or set ${setting} to another port (${setting}=0 picks a free one).`
      );
    case 'EACCES':
      return (
        `Cannot listen on ${where} (${setting}=${String(port)}): this user may not open that port ` +
        `(below 1024, only root or a program with CAP_NET_BIND_SERVICE may). Set ${setting} to 1024 or above.`
      );
    case 'EADDRNOTAVAIL':
      return (
        `Cannot listen on ${where} (${hostSetting}=${listener.host}): that is not an address of this machine. ` +
        `Set ${hostSetting} to one of its addresses (127.0.0.1, or 0.0.0.0 for all).`
      );
    default:
      return undefined;
  }
}
