// The package ships no types: it takes the text format and returns prom2json's shape
// (test/support/prometheus.ts types that shape where it is used).
declare module 'parse-prometheus-text-format' {
  export default function parsePrometheusTextFormat(text: string): unknown[];
}
