// Runs `npm start`'s migrations in a child process (migrate-child.ts): the WASM schema engine's memory
// leaves with it (docs/benchmarks.md, "Figures behind the code's choices"). Up to date: no child.
import { fork } from 'node:child_process';
import { databaseNeedsMigration } from './database.js';

export type MigrationOutcome = { applied: string[] } | { error: { message: string; code?: string } };

const FROM_SOURCE = import.meta.url.endsWith('.ts');
const CHILD_ENTRY = new URL(`./migrate-child${FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url);
/** From source, tsx's loader too (a test worker may lack it). */
const childExecArgv = () =>
  FROM_SOURCE && !process.execArgv.some((flag) => flag.includes('tsx'))
    ? [...process.execArgv, '--import', import.meta.resolve('tsx')]
    : process.execArgv;

export async function migrateInChildProcess(databaseUrl: string): Promise<string[]> {
  if (!(await databaseNeedsMigration(databaseUrl))) return [];
  const child = fork(CHILD_ENTRY, [], { execArgv: childExecArgv(), stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'json' });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    if (stderr.length < 4_000) stderr += chunk.toString();
  });
  const outcome = await new Promise<MigrationOutcome>((resolve, reject) => {
    let answer: MigrationOutcome | undefined;
    child.once('message', (message) => (answer = message as MigrationOutcome));
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (answer) resolve(answer);
      else {
        const detail = stderr.trim().split('\n')[0] || `exit code ${code ?? signal}`;
        reject(new Error(`The migration process stopped without an answer: ${detail}`));
      }
    });
    child.send({ databaseUrl });
  });
  if ('applied' in outcome) return outcome.applied;
  throw Object.assign(new Error(outcome.error.message), { code: outcome.error.code });
}
