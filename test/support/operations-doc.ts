// The balancer configs of docs/operations.md ("Stopping behind a load balancer"), read out of the
// page, so that the balancer suites run exactly what the docs give (with the test's own addresses).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './service-process.js';

/** The one fenced block of `language` (```haproxy, ```nginx) in docs/operations.md. */
export function operationsDocBlock(language: string): string {
  const page = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
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
