// The request series (src/metrics/request-series.ts) are counted outside prom-client's classes
// for speed; a scrape must read exactly as prom-client's own Counter and Histogram would.
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerRequestSeries } from '../../src/metrics/request-series.ts';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const names = {
  requestsName: 'svc_http_requests_total',
  requestsHelp: 'HTTP requests answered',
  durationName: 'svc_http_request_duration_seconds',
  durationHelp: 'Time to answer',
};

function both() {
  const ours = new Registry();
  const series = registerRequestSeries([ours], { ...names, buckets: BUCKETS });
  const theirs = new Registry();
  const labelNames = ['listener', 'method', 'route', 'status'] as const;
  const counter = new Counter({
    name: names.requestsName,
    help: names.requestsHelp,
    labelNames,
    registers: [theirs],
  });
  const histogram = new Histogram({
    name: names.durationName,
    help: names.durationHelp,
    labelNames,
    buckets: BUCKETS,
    registers: [theirs],
  });
  const observe = (listener: string, method: string, route: string, status: number, seconds: number) => {
    series.observe(listener, method, route, status, seconds);
    const labels = { listener, method, route, status: String(status) };
    counter.inc(labels);
    histogram.observe(labels, seconds);
  };
  return { ours, theirs, observe };
}

describe('request series', () => {
  it('read as prom-client Counter and Histogram fed the same requests read (text and JSON)', async () => {
    const { ours, theirs, observe } = both();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    // Values on each bound, between, beyond the last, zero; several label sets in a mixed order.
    const values = [0, ...BUCKETS, ...BUCKETS.map((b) => b * 0.7), 31, 120, 0.0001];
    const sets: [string, string, string, number][] = [
      ['public', 'GET', '/v1/me', 200],
      ['public', 'POST', '/v1/redeem', 429],
      ['admin', 'GET', 'unmatched', 404],
      ['public', 'OTHER', '/v1/jobs/:id', 405],
    ];
    let n = 0;
    for (const v of values)
      for (const [l, m, r, s] of sets.slice(0, 1 + (n++ % sets.length))) observe(l, m, r, s, v);
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain(
      'svc_http_request_duration_seconds_bucket{le="0.005",listener="public",method="GET",route="/v1/me",status="200"}',
    );
    expect(text).toMatch(
      /^svc_http_requests_total\{listener="public",method="GET",route="\/v1\/me",status="200"\} \d+$/m,
    );
    // The JSON form too (prom-client's has an empty exemplar on each bucket; key order aside).
    const strip = (v: unknown) => JSON.parse(JSON.stringify(v, (k, x) => (k === 'exemplar' ? undefined : x)));
    expect(strip(await ours.getMetricsAsJSON())).toEqual(strip(await theirs.getMetricsAsJSON()));
    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});
