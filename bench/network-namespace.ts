// Every load the benchmarks send crosses a loopback with an Ethernet's MTU, in a network namespace of
// their own (scripts/in-network-namespace.sh says why): each entry point calls this first.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../scripts/in-network-namespace.sh', import.meta.url));

/** Inside such a namespace: returns. Outside: runs this same command inside one, then exits with its status. */
export function runInNetworkNamespace(): void {
  if (process.env.ANIMAL_STORE_NETWORK_NAMESPACE === 'mtu1500') return;
  const { status, error } = spawnSync('bash', [SCRIPT, process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
  });
  if (error) throw error;
  process.exit(status ?? 1);
}
