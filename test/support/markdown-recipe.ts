// A recipe of a Markdown page run as written (README.md's "Use it from your app", client/README.md's
// "In a web app"): the fenced blocks of one section, in order. A block whose info string names a
// file (```ts app.ts) is written there; a ```sh block runs in bash, in the folder the block before
// left, with the variables the blocks before exported; a ```sh server block starts a server that
// keeps running, and is done when it prints its address.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface RecipeBlock {
  info: string;
  text: string;
}

/** The fenced blocks of the Markdown file's section `heading` (a `## ` heading), in order. */
export async function recipeBlocks(file: string, heading: string): Promise<RecipeBlock[]> {
  const page = await readFile(file, 'utf8');
  const start = page.indexOf(`\n## ${heading}\n`);
  if (start === -1) throw new Error(`${file} has no section "${heading}"`);
  const end = page.indexOf('\n## ', start + 1);
  const section = page.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)].map((match) => ({ info: match[1]!.trim(), text: match[2]! }));
}

export interface RunningServer {
  /** The first http:// address it printed. */
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/** Runs blocks one after the other, as a person in one terminal would. */
export class RecipeRunner {
  /** The folder the last shell block left. */
  cwd: string;
  readonly servers: RunningServer[] = [];
  private readonly stateFile: string;

  constructor(
    start: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {
    this.cwd = start;
    this.stateFile = join(start, '.recipe-state.sh');
  }

  /** The shell's preamble: the variables exported so far, and the folder. */
  private async preamble(): Promise<string> {
    const state = await readFile(this.stateFile, 'utf8').catch(() => '');
    return `${state}\ncd '${this.cwd}'\n`;
  }

  /** Writes a file block, or runs a shell block; returns a shell block's output. */
  async block({ info, text }: RecipeBlock): Promise<string> {
    const [language, name] = info.split(/\s+/);
    if (language !== 'sh') {
      if (!name) throw new Error(`a ${language} block names no file:\n${text}`);
      await mkdir(dirname(join(this.cwd, name)), { recursive: true });
      await writeFile(join(this.cwd, name), text);
      return '';
    }
    if (name === 'server') return (await this.server(text)).url;
    const script = `${await this.preamble()}${text}\nexport -p > '${this.stateFile}'\necho "@@cwd $(pwd)"`;
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], { env: this.env, maxBuffer: 16 * 1024 * 1024 }).catch(
      (error: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(`the recipe's commands failed:\n${text}\n${error.stdout ?? ''}${error.stderr ?? error.message}`);
      },
    );
    this.cwd = stdout.match(/@@cwd (.*)\n?$/)![1]!;
    return stdout;
  }

  /** Starts a server block in its own process group; done when it prints an http:// address. */
  private async server(text: string): Promise<RunningServer> {
    const child: ChildProcess = spawn('bash', ['-euo', 'pipefail', '-c', `${await this.preamble()}${text}`], {
      env: this.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no address from:\n${text}\n${output}`)), 60_000);
      const read = (chunk: Buffer) => {
        output += chunk.toString();
        // eslint-disable-next-line no-control-regex -- colours of a terminal program
        const address = output.replace(/\u001b\[[\d;]*m/g, '').match(/http:\/\/(?:localhost|127\.0\.0\.1):\d+\/?/);
        if (address) {
          clearTimeout(timer);
          resolve(address[0].replace(/\/$/, ''));
        }
      };
      child.stdout!.on('data', read);
      child.stderr!.on('data', read);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the server stopped (${code}):\n${text}\n${output}`));
      });
    });
    const running: RunningServer = {
      url,
      output: () => output,
      stop: async () => {
        if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
        await exited;
      },
    };
    this.servers.push(running);
    return running;
  }

  async stopServers(): Promise<void> {
    await Promise.all(this.servers.map((server) => server.stop()));
  }
}
