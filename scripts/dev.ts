// `npm run dev`: the service from source, restarted on every change (tsx watch), its JSON log made
// readable by pino-pretty. One process in front instead of a shell pipeline: a shell killed by
// npm's forwarded SIGTERM would leave the watcher and the service running. Here SIGTERM/SIGINT go
// to the watcher, which stops the service, and this exits with the watcher's code.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import pretty from 'pino-pretty';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsxCli = createRequire(import.meta.url).resolve('tsx/cli');

const watcher = spawn(process.execPath, [tsxCli, 'watch', 'src/start.ts'], { cwd: root, stdio: ['inherit', 'pipe', 'inherit'] });
watcher.stdout.pipe(pretty({ colorize: process.stdout.isTTY }));

for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => watcher.kill(signal));
watcher.on('exit', (code, signal) => process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0)));
