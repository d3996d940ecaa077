// The alerting rules operators load (docs/prometheus/animal-store-alerts.yml), checked with
// Prometheus's promtool: the file is valid; its unit tests (animal-store-alerts.test.yml, beside
// this file) make each alert fire on series that mean what it says and stay quiet on ones that look
// alike; every alert has both kinds of case; docs/observability.md's table names exactly these alerts;
// and a real scrape of the service, after traffic on PostgreSQL, has every metric the rules read and
// passes `promtool check metrics` (its naming lint included).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scrape } from '../support/prometheus.js';
import { ROOT } from '../support/service-process.js';
import { json, startTestServer, type TestServer } from '../support/test-server.js';

const RULES = join(ROOT, 'docs', 'prometheus', 'animal-store-alerts.yml');
const RULE_TESTS = join(ROOT, 'test', 'prometheus', 'animal-store-alerts.test.yml');

const HOW_TO_GET_PROMTOOL =
  "promtool is needed for the alert tests (npm run test:alerts): install Debian's `prometheus` package " +
  '(`apt-get install prometheus`, which brings /usr/bin/promtool; `bash .ci/run` does it).';

function promtool(args: string[], input?: string) {
  const run = spawnSync('promtool', args, { cwd: ROOT, input, encoding: 'utf8', timeout: 60_000 });
  if (run.error) throw new Error(`${HOW_TO_GET_PROMTOOL} (${run.error.message})`);
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** The alerts the rules file defines, in its order. */
const ruleAlerts = () => [...readFileSync(RULES, 'utf8').matchAll(/^\s+- alert: (\w+)$/gm)].map((match) => match[1]!);

beforeAll(() => {
  expect(promtool(['--version']).output).toMatch(/^promtool, version/);
});

describe('docs/prometheus/animal-store-alerts.yml', () => {
  it('is a valid rules file (promtool check rules)', () => {
    const { status, output } = promtool(['check', 'rules', RULES]);
    expect(output).toContain(`SUCCESS: ${ruleAlerts().length} rules found`);
    expect(status).toBe(0);
  });

  it('fires and stays quiet as its unit tests say (promtool test rules)', () => {
    const { status, output } = promtool(['test', 'rules', RULE_TESTS]);
    expect(output).toContain('SUCCESS');
    expect(status, output).toBe(0);
  });

  it('has, for every alert, a case where it fires and one where it stays quiet', () => {
    const cases = [...readFileSync(RULE_TESTS, 'utf8').matchAll(/alertname: (\w+)\n\s+exp_alerts:( \[\])?/g)];
    const firing = new Set(cases.filter((match) => match[2] === undefined).map((match) => match[1]));
    const quiet = new Set(cases.filter((match) => match[2] !== undefined).map((match) => match[1]));
    expect(ruleAlerts().length).toBeGreaterThanOrEqual(10);
    for (const alert of ruleAlerts()) {
      expect(firing.has(alert), `${alert} fires in a case`).toBe(true);
      expect(quiet.has(alert), `${alert} stays quiet in a case`).toBe(true);
    }
  });

  it("holds exactly the alerts docs/observability.md's table names", () => {
    const page = readFileSync(join(ROOT, 'docs', 'observability.md'), 'utf8');
    const heading = page.indexOf('### Prometheus configuration and alerts');
    expect(heading).toBeGreaterThan(0);
    const section = page.slice(heading, page.indexOf('\n## ', heading) === -1 ? undefined : page.indexOf('\n## ', heading));
    const named = [...section.matchAll(/^\| `(AnimalStore\w+)` \|/gm)].map((match) => match[1]);
    expect(named).toEqual(ruleAlerts());
  });
});

describe('a scrape of the service on PostgreSQL, after traffic', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ provider: 'postgresql' });
  });
  afterAll(() => server.close());

  it('has every metric the rules read, and passes promtool check metrics', async () => {
    const pet = await json(server.post('/v1/pets', { name: 'Scraped', categoryId: 1 }));
    expect((await server.request(`/v1/pets/${pet.id}`)).status).toBe(200);
    expect((await server.request('/v1/pets/999999')).status).toBe(404);
    expect((await server.request('/trpc/pets.list')).status).toBe(200);
    expect((await server.request('/v1/pets', { headers: { authorization: 'Bearer wrong-key-0123456789abcdef' } })).status).toBe(401);
    const { text, samples } = await scrape(server.baseUrl);

    // Every series name in the rules' expressions (`up` is Prometheus's own), as the scrape has it.
    const rules = readFileSync(RULES, 'utf8');
    const read = new Set([...rules.matchAll(/\b([a-z_]+)\{job="animal-store"/g)].map((match) => match[1]!));
    read.delete('up');
    expect(read.size).toBeGreaterThanOrEqual(9);
    const scraped = new Set(samples.map((sample) => sample.name));
    for (const name of read) expect(scraped.has(name), `${name} is scraped`).toBe(true);

    const { status, output } = promtool(['check', 'metrics'], text);
    expect(output).toBe('');
    expect(status).toBe(0);
  });
});
