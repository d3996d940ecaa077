// Reading /metrics the way a Prometheus server would. The whole text goes through a parser we did
// not write (parse-prometheus-text-format, ported from Prometheus's Python client's parser), which
// throws on a malformed line and gives each family's type. That parser folds a labelled
// histogram's series into one, so the samples themselves are read line by line here: one
// `name{label="value",…} number` per line, label values with \\, \" and \n escaped.
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { expect } from 'vitest';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Scrape {
  text: string;
  /** Each family's type (COUNTER, GAUGE, HISTOGRAM…), by family name. */
  types: Map<string, string>;
  samples: Sample[];
  /** The samples named `name` whose labels include `labels`. */
  series(name: string, labels?: Record<string, string>): Sample[];
  /** The value of the one sample named `name` whose labels include `labels` (undefined: none). */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;

function unescapeLabel(value: string): string {
  return value.replace(/\\(.)/g, (_, char: string) => (char === 'n' ? '\n' : char));
}

function parseSample(line: string): Sample {
  const match = SAMPLE_LINE.exec(line);
  if (!match) throw new Error(`not a sample line: ${line}`);
  const [, name, labelText = '', value] = match as unknown as [string, string, string | undefined, string];
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  let consumed = 0;
  for (let label = LABEL.exec(labelText); label; label = LABEL.exec(labelText)) {
    labels[label[1]!] = unescapeLabel(label[2]!);
    consumed = LABEL.lastIndex;
  }
  if (consumed !== labelText.length) throw new Error(`bad labels in: ${line}`);
  return { name, labels, value: Number(value) };
}

function includes(sample: Sample, labels: Record<string, string>): boolean {
  return Object.entries(labels).every(([key, value]) => sample.labels[key] === value);
}

/** GET /metrics on `baseUrl`, checked to be Prometheus text, and parsed. */
export async function scrape(baseUrl: string): Promise<Scrape> {
  const response = await fetch(`${baseUrl}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  const text = await response.text();
  const families = parsePrometheusTextFormat(text) as { name: string; type: string }[];
  const types = new Map(families.map((family) => [family.name, family.type]));
  const samples = text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map(parseSample);
  const series = (name: string, labels: Record<string, string> = {}) =>
    samples.filter((sample) => sample.name === name && includes(sample, labels));
  return {
    text,
    types,
    samples,
    series,
    value(name, labels) {
      const found = series(name, labels);
      expect(found.length, `samples of ${name} ${JSON.stringify(labels ?? {})}`).toBeLessThanOrEqual(1);
      return found[0]?.value;
    },
  };
}
