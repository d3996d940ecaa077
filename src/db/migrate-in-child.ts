// `npm start`'s migration step, run in a child process when there is something to apply.
//
// The schema engine is WebAssembly, and once it is loaded its compiled code and memory stay in the
// process for good, a share of the serving process's RSS after a start that migrated (figure in
// docs/benchmarks.md, "Figures behind the code's choices"). A child that applies the migrations
// and exits gives all of it back. An up-to-date database, the usual start, is checked here with a
// plain query and starts no child. The child is migrate-child.ts; it answers on the IPC channel.
import { fork } from 'node:child_process';
import { databaseNeedsMigration } from './database.js';

/** What the child sends back: the migrations it applied, or why it could not. */
export type MigrationOutcome = { applied: string[] } | { error: { message: string; code?: string } };

/** The child's entry, beside this file: .ts when the service runs from source (tsx), else .js. */
const FROM_SOURCE = import.meta.url.endsWith('.ts');
const CHILD_ENTRY = new URL(`./migrate-child${FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url);
/** This process's Node flags, and from source tsx's loader (a test runner's worker may not have it). */
const childExecArgv = () =>
  FROM_SOURCE && !process.execArgv.some((flag) => flag.includes('tsx'))
    ? [...process.execArgv, '--import', import.meta.resolve('tsx')]
    : process.execArgv;

/**
 * Applies pending migrations to `databaseUrl` in a child process (the same Node and flags as this
 * one) and returns their names; empty, with no child, when the database is up to date. The child's
 * error is thrown here with its message and code.
 */
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
