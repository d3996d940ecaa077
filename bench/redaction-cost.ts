// `npx tsx bench/redaction-cost.ts`: what src/domain/api-key-shape.ts's redaction costs per log line
// (the logger runs it on every line: src/logger.ts), for a REST request line, a tRPC GET line (its
// input percent-encoded) and a line holding a key. CPU time, the least of interleaved rounds, so
// that the figure survives a shared, loaded machine.
import { redactApiKeys } from '../src/logger.js';

const ROUNDS = Number(process.env.ROUNDS ?? 9);
const CALLS = 500_000;

const fields =
  '{"level":30,"time":1795743716113,"pid":18611,"hostname":"vm","reqId":"f3a1c2d4-aaaa-bbbb-cccc-0123456789ab",' +
  '"trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331","method":"GET",';
const end = ',"statusCode":200,"responseTimeMs":1.2,"client":"127.0.0.1","keyId":"env-1a2b3c","msg":"request completed"}\n';
const LINES: Record<string, string> = {
  'REST list (no %)': `${fields}"route":"/v1/pets","url":"/v1/pets?limit=20"${end}`,
  'tRPC GET (input %-encoded)': `${fields}"route":"/trpc/pets.list","url":"/trpc/pets.list?batch=1&input=%7B%220%22%3A%7B%22limit%22%3A20%7D%7D"${end}`,
  'a key in the query string': `${fields}"route":"/v1/pets","url":"/v1/pets?q=ask_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"${end}`,
  'a key percent-encoded': `${fields}"route":"/v1/pets","url":"/v1/pets?q=%61%73%6B%5F${'%41'.repeat(43)}"${end}`,
};

const least: Record<string, number> = {};
let sink = 0;
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, line] of Object.entries(LINES)) {
    for (let i = 0; i < CALLS / 10; i++) sink += redactApiKeys(line).length; // warm
    const before = process.cpuUsage();
    for (let i = 0; i < CALLS; i++) sink += redactApiKeys(line).length;
    const used = process.cpuUsage(before);
    least[name] = Math.min(least[name] ?? Infinity, ((used.user + used.system) * 1000) / CALLS);
  }
}
for (const [name, ns] of Object.entries(least)) process.stdout.write(`${name.padEnd(30)} ${ns.toFixed(0)} ns CPU per line\n`);
if (sink === 0) process.stdout.write('\n');
