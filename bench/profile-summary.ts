// Reads a V8 CPU profile (`node --cpu-prof`, or bench/profile.ts's) and prints where the time
// went: self time by area (our code, each package, Node internals, GC) and the hottest functions;
// given the number of requests the profile covers, in µs per request. Used to find the cost of
// each layer of a request; see docs/benchmarks.md for how the profiles were taken.
//
//   npx tsx bench/profile-summary.ts <file.cpuprofile> [top N functions, default 25] [requests]
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Which area a frame belongs to: a package under node_modules, our src/, Node itself, or V8. */
function area(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : '(native)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1]!;
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  const src = /\/(src|bench|test|dist)\/(.*)$/.exec(url);
  if (src) return `${src[1] === 'dist' ? 'src' : src[1]}/${src[2]!.split('/')[0]}`;
  return url;
}

export interface Summary {
  /** Self time sampled, in µs, idle included. */
  total: number;
  /** Self time in µs by area and by function (`name  area:line`). */
  byArea: Map<string, number>;
  byFunction: Map<string, number>;
}

export function summarise(profile: Profile): Summary {
  // Self time of each node: the time deltas of the samples that landed in it.
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfTime = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const byArea = new Map<string, number>();
  const byFunction = new Map<string, number>();
  for (const [id, time] of selfTime) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const where = area(url, functionName);
    byArea.set(where, (byArea.get(where) ?? 0) + time);
    const key = `${functionName || '(anonymous)'}  ${where}${url ? `:${lineNumber + 1}` : ''}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + time);
  }
  return { total: [...selfTime.values()].reduce((a, b) => a + b, 0), byArea, byFunction };
}

function main(file: string, top: number, requests: number | undefined): void {
  const { total, byArea, byFunction } = summarise(JSON.parse(readFileSync(file, 'utf8')) as Profile);
  const share = (time: number) =>
    `${((100 * time) / total).toFixed(1).padStart(5)}%${requests ? `  ${(time / requests).toFixed(2).padStart(7)} µs/req` : ''}`;
  console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled${requests ? `, ${requests} requests` : ''}`);
  console.log('\nself time by area');
  for (const [name, time] of [...byArea].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`  ${share(time)}  ${name}`);
  console.log(`\nhottest ${top} functions (self time)`);
  for (const [name, time] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${share(time)}  ${name}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [file, topArg, requestsArg] = process.argv.slice(2);
  if (!file) {
    console.error('usage: tsx bench/profile-summary.ts <file.cpuprofile> [top] [requests]');
    process.exit(1);
  }
  main(file, Number(topArg ?? 25), requestsArg ? Number(requestsArg) : undefined);
}
