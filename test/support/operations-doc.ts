// What docs/operations.md gives operators, read out of the page, so that the suites and the bench run
// exactly that: the balancer configs ("Stopping behind a load balancer", with the test's own addresses)
// and the memory bounds of the run line ("The process's memory settings").
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './service-process.js';

const operationsDoc = () => readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');

/** The operator's NODE_OPTIONS: those of the run line, `… NODE_OPTIONS="…" node dist/start.js`. */
export function operatorNodeOptions(): string {
  const match = /^NODE_ENV=production .*NODE_OPTIONS="([^"]+)" node dist\/start\.js$/m.exec(operationsDoc());
  if (!match) throw new Error('docs/operations.md has no run line with NODE_OPTIONS="…" node dist/start.js');
  return match[1]!;
}

/** The one fenced block of `language` (```haproxy, ```nginx) in docs/operations.md. */
export function operationsDocBlock(language: string): string {
  const page = operationsDoc();
  const blocks = [...page.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((match) => match[1]!);
  if (blocks.length !== 1) throw new Error(`docs/operations.md has ${blocks.length} \`\`\`${language} blocks, not one`);
  return blocks[0]!;
}

/**
 * `text` with `pattern` replaced, which must occur: a docs change that drops a line the test
 * fills in fails here, not by testing another config.
 */
export function replaceIn(text: string, pattern: RegExp, replacement: string | ((match: string, ...groups: string[]) => string)): string {
  if (!pattern.test(text)) throw new Error(`the docs' config has no line matching ${pattern}`);
  return typeof replacement === 'string' ? text.replace(pattern, replacement) : text.replace(pattern, replacement);
}
