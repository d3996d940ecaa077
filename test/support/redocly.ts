// Redocly CLI's `lint --extends recommended` on an OpenAPI document file: its problems, one line each.
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

export async function redoclyProblems(documentFile: string): Promise<{ problems: string[]; errors: number; warnings: number }> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [resolve('node_modules', '@redocly/cli/bin/cli.js'), 'lint', '--extends', 'recommended', '--format', 'json', documentFile],
    { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } },
  ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
  const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as {
    totals: { errors: number; warnings: number };
    problems: Array<{ ruleId: string; message: string }>;
  };
  const { errors, warnings } = report.totals;
  return { problems: report.problems.map((problem) => `${problem.ruleId}: ${problem.message}`), errors, warnings };
}
