// Reads a V8 CPU profile (`node --cpu-prof`) and prints where the time went: self time by area
// (our code, each package, Node internals, GC) and the hottest functions. Used to find the cost
// of each layer of a request; see docs/benchmarks.md for how the profiles were taken.
//
//   npx tsx bench/profile-summary.ts <file.cpuprofile> [top N functions, default 25]
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: tsx bench/profile-summary.ts <file.cpuprofile> [top]');
  process.exit(1);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const top = Number(topArg ?? 25);

/** Which area a frame belongs to: a package under node_modules, our src/, Node itself, or V8. */
function area(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : '(native)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1]!;
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  const src = /\/(src|bench|test)\/(.*)$/.exec(url);
  if (src) return `${src[1]}/${src[2]!.split('/')[0]}`;
  return url;
}

// Self time of each node: the time deltas of the samples that landed in it.
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfTime = new Map<number, number>();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!;
  selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const total = [...selfTime.values()].reduce((a, b) => a + b, 0);

const byArea = new Map<string, number>();
const byFunction = new Map<string, number>();
for (const [id, time] of selfTime) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const where = area(url, functionName);
  byArea.set(where, (byArea.get(where) ?? 0) + time);
  const key = `${functionName || '(anonymous)'}  ${where}${url ? `:${lineNumber + 1}` : ''}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + time);
}

const percent = (time: number) => `${((100 * time) / total).toFixed(1).padStart(5)}%`;
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`);
console.log('\nself time by area');
for (const [name, time] of [...byArea].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`  ${percent(time)}  ${name}`);
console.log(`\nhottest ${top} functions (self time)`);
for (const [name, time] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${percent(time)}  ${name}`);
