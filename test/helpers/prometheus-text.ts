// A strict reader of the Prometheus text exposition format (version 0.0.4), for metrics tests:
// it throws on anything a Prometheus server would refuse (bad names, labels, escapes or values,
// a sample without a TYPE, a family declared twice, a duplicate series, histogram buckets that
// decrease or whose +Inf bucket is not the count), and answers the samples by series.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Scrape {
  samples: Sample[];
  types: Map<string, string>;
  /** The value of one series (exact labels), or 0 when it is absent. */
  value(name: string, labels?: Record<string, string>): number;
  /** The sum over every series of `name` whose labels include `labels`. */
  sum(name: string, labels?: Record<string, string>): number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
// Prometheus reads values with Go's strconv.ParseFloat, which takes Inf and NaN in any case
// (prom-client writes `Nan` for a gauge without data).
const VALUE = /^(?:[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|[+-]?inf|nan)$/i;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export const seriesKey = (name: string, labels: Record<string, string>) =>
  `${name}{${Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`)
    .join(',')}}`;

function parseValue(text: string, line: string): number {
  if (!VALUE.test(text)) throw new Error(`bad sample value in: ${line}`);
  const lower = text.toLowerCase();
  if (lower === 'nan') return Number.NaN;
  if (lower.endsWith('inf')) return lower.startsWith('-') ? -Infinity : Infinity;
  return Number(text);
}

/** Reads `{a="x",b="y"}` from `s` at `i` (just after the brace); returns labels and the end index. */
function parseLabels(
  s: string,
  start: number,
  line: string,
): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = start;
  for (;;) {
    if (s[i] === '}') return { labels, end: i + 1 };
    const eq = s.indexOf('=', i);
    if (eq < 0) throw new Error(`bad labels in: ${line}`);
    const name = s.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`bad label name ${JSON.stringify(name)} in: ${line}`);
    if (name in labels) throw new Error(`label ${name} twice in: ${line}`);
    if (s[eq + 1] !== '"') throw new Error(`unquoted label value in: ${line}`);
    let value = '';
    let j = eq + 2;
    for (;;) {
      const c = s[j];
      if (c === undefined) throw new Error(`unterminated label value in: ${line}`);
      if (c === '"') break;
      if (c === '\\') {
        const e = s[j + 1];
        if (e === '\\') value += '\\';
        else if (e === '"') value += '"';
        else if (e === 'n') value += '\n';
        else throw new Error(`bad escape in: ${line}`);
        j += 2;
        continue;
      }
      value += c;
      j += 1;
    }
    labels[name] = value;
    i = j + 1;
    if (s[i] === ',') i += 1;
    else if (s[i] !== '}') throw new Error(`expected , or } in: ${line}`);
  }
}

/** The family a sample belongs to, given the declared types. */
function familyOf(name: string, types: Map<string, string>): string | undefined {
  if (types.has(name)) return name;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue;
    const base = name.slice(0, -suffix.length);
    const type = types.get(base);
    if (type === 'histogram' || (type === 'summary' && suffix !== '_bucket')) return base;
  }
  return undefined;
}

export function parsePrometheusText(text: string): Scrape {
  if (text.length > 0 && !text.endsWith('\n')) throw new Error('the exposition does not end with a newline');
  const types = new Map<string, string>();
  const helps = new Set<string>();
  const samples: Sample[] = [];
  const seen = new Set<string>();
  const closed = new Set<string>();
  let current: string | undefined;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
      if (!m) continue; // a plain comment
      const [, kind, name, rest] = m as unknown as [string, string, string, string | undefined];
      if (!NAME.test(name)) throw new Error(`bad metric name in: ${line}`);
      if (kind === 'TYPE') {
        if (types.has(name)) throw new Error(`TYPE of ${name} declared twice`);
        if (!rest || !TYPES.has(rest)) throw new Error(`bad type in: ${line}`);
        types.set(name, rest);
      } else {
        if (helps.has(name)) throw new Error(`HELP of ${name} given twice`);
        helps.add(name);
      }
      continue;
    }
    const nameEnd = line.search(/[{ ]/);
    if (nameEnd <= 0) throw new Error(`bad sample line: ${line}`);
    const name = line.slice(0, nameEnd);
    if (!NAME.test(name)) throw new Error(`bad metric name in: ${line}`);
    let rest = line.slice(nameEnd);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) {
      const parsed = parseLabels(line, nameEnd + 1, line);
      labels = parsed.labels;
      rest = line.slice(parsed.end);
    }
    const fields = rest.trim().split(/ +/);
    if (!rest.startsWith(' ') || fields.length < 1 || fields.length > 2)
      throw new Error(`bad sample line: ${line}`);
    if (fields[1] !== undefined && !/^-?\d+$/.test(fields[1])) throw new Error(`bad timestamp in: ${line}`);
    const family = familyOf(name, types);
    if (!family) throw new Error(`sample of ${name} without a TYPE before it`);
    // A family's samples come together: once another family started, it may not come back.
    if (family !== current) {
      if (closed.has(family)) throw new Error(`samples of ${family} are not grouped together`);
      if (current) closed.add(current);
      current = family;
    }
    const key = seriesKey(name, labels);
    if (seen.has(key)) throw new Error(`duplicate series ${key}`);
    seen.add(key);
    samples.push({ name, labels, value: parseValue(fields[0]!, line) });
  }
  checkHistograms(samples, types);

  const byKey = new Map(samples.map((s) => [seriesKey(s.name, s.labels), s.value]));
  return {
    samples,
    types,
    value: (name, labels = {}) => byKey.get(seriesKey(name, labels)) ?? 0,
    sum: (name, labels = {}) =>
      samples
        .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        .reduce((a, s) => a + s.value, 0),
  };
}

/** Buckets never decrease with `le`, and the +Inf bucket is the count, for every histogram series. */
function checkHistograms(samples: Sample[], types: Map<string, string>) {
  for (const [family, type] of types) {
    if (type !== 'histogram') continue;
    const groups = new Map<string, { le: number; value: number }[]>();
    for (const s of samples) {
      if (s.name !== `${family}_bucket`) continue;
      const { le, ...rest } = s.labels;
      if (le === undefined) throw new Error(`${family}_bucket without le`);
      const key = seriesKey(family, rest);
      const list = groups.get(key) ?? [];
      list.push({ le: parseValue(le, `le="${le}"`), value: s.value });
      groups.set(key, list);
    }
    for (const [key, buckets] of groups) {
      buckets.sort((a, b) => a.le - b.le);
      for (let i = 1; i < buckets.length; i++) {
        if (buckets[i]!.value < buckets[i - 1]!.value) throw new Error(`${key}: buckets decrease`);
      }
      const inf = buckets.at(-1)!;
      if (inf.le !== Infinity) throw new Error(`${key}: no +Inf bucket`);
      const labels = key.slice(family.length);
      const count = samples.find((s) => seriesKey(s.name, s.labels) === `${family}_count${labels}`);
      if (!count || count.value !== inf.value) throw new Error(`${key}: +Inf bucket is not the count`);
      if (!samples.some((s) => seriesKey(s.name, s.labels) === `${family}_sum${labels}`))
        throw new Error(`${key}: no _sum`);
    }
  }
}
