// The two series every answered HTTP request adds to (docs/reference/running.md#metrics): requests by listener,
// method, route pattern and status, and their duration histogram. Counted here in one plain record
// per label set and read by prom-client's registry at a scrape, in the shape its own Counter and
// Histogram give it (test/requests/request-series.test.ts holds the two texts equal). Why not prom-client's
// own classes: their inc and observe check and hash the label set on every call, and under
// GET /v1/me that was 8–10 µs of CPU a request in the gateway's profile, a third of what the
// gateway costs over its ceiling (bench/history.md). Every other series stays
// prom-client's.
import type { Registry } from 'prom-client';

type Labels = { listener: string; method: string; route: string; status: string };

interface LabelSet {
  labels: Labels;
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative); beyond the last bound only in `count`. */
  perBucket: number[];
}

export interface RequestSeries {
  observe(listener: string, method: string, route: string, status: number, seconds: number): void;
}

export function registerRequestSeries(
  registers: Registry[],
  opts: {
    requestsName: string;
    durationName: string;
    requestsHelp: string;
    durationHelp: string;
    buckets: number[];
  },
): RequestSeries {
  const bounds = [...opts.buckets].sort((a, b) => a - b);
  // Label sets only ever added (a route pattern, a method of eight, a status): a few hundred.
  const sets = new Map<string, LabelSet>();

  // What prom-client's registry reads of a metric, and again with its values at a scrape.
  const requestsHead = {
    name: opts.requestsName,
    help: opts.requestsHelp,
    type: 'counter',
    aggregator: 'sum',
  };
  const durationHead = {
    name: opts.durationName,
    help: opts.durationHelp,
    type: 'histogram',
    aggregator: 'sum',
  };
  const requests = {
    ...requestsHead,
    get: async () => ({
      ...requestsHead,
      values: [...sets.values()].map((s) => ({ value: s.count, labels: s.labels })),
    }),
    reset: () => sets.clear(),
  };
  // As prom-client's Histogram: each bucket's `le` with the set's labels shared, then +Inf, sum and
  // count; `get` (JSON) has the labels merged.
  const durationValues = () => {
    const values: {
      value: number;
      labels: Record<string, string | number>;
      sharedLabels: Labels;
      metricName: string;
    }[] = [];
    for (const s of sets.values()) {
      let cumulative = 0;
      bounds.forEach((le, i) => {
        cumulative += s.perBucket[i]!;
        values.push({
          labels: { le },
          sharedLabels: s.labels,
          value: cumulative,
          metricName: `${opts.durationName}_bucket`,
        });
      });
      values.push(
        {
          labels: { le: '+Inf' },
          sharedLabels: s.labels,
          value: s.count,
          metricName: `${opts.durationName}_bucket`,
        },
        { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${opts.durationName}_sum` },
        { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${opts.durationName}_count` },
      );
    }
    return values;
  };
  const duration = {
    ...durationHead,
    getForPromString: async () => ({ ...durationHead, values: durationValues() }),
    get: async () => ({
      ...durationHead,
      values: durationValues().map(({ sharedLabels, labels, ...v }) => ({
        ...v,
        labels: { ...sharedLabels, ...labels },
      })),
    }),
    reset: () => sets.clear(),
  };
  for (const registry of registers) {
    registry.registerMetric(requests as never);
    registry.registerMetric(duration as never);
  }

  return {
    observe(listener, method, route, status, seconds) {
      const key = `${listener} ${method} ${status} ${route}`;
      let s = sets.get(key);
      if (!s) {
        s = {
          labels: { listener, method, route, status: String(status) },
          count: 0,
          sum: 0,
          perBucket: bounds.map(() => 0),
        };
        sets.set(key, s);
      }
      s.count++;
      s.sum += seconds;
      // The first bound the value is within (le: less than or equal), as prom-client counts it.
      let i = 0;
      while (i < bounds.length && seconds > bounds[i]!) i++;
      if (i < bounds.length) s.perBucket[i]!++;
    },
  };
}
