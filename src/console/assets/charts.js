// Usage plots with uPlot (served from node_modules): stacked bars per hour or day, one colour per
// outcome (or billed against refunded), over the buckets of GET /admin/v1/usage. Counts are
// whole numbers, so the y axis ticks only at integers and says what it counts; the legend shows
// the latest bucket's values until the pointer picks another. Under each plot, the totals as a
// table, so the numbers can be read (and checked) without the picture.
import uPlot from '/console/vendor/uplot.js';
import { h } from './dom.js';

export const OUTCOME_SERIES = [
  ['activated', '#2e7d32'],
  ['code_used', '#1565c0'],
  ['invalid_code', '#6a1b9a'],
  ['bad_player', '#ef6c00'],
  ['failed', '#c62828'],
];
export const BILLING_SERIES = [
  ['billed', '#1565c0'],
  ['refunded', '#ef6c00'],
];

// Tick steps for counts: never a fraction of a code.
const INTEGER_STEPS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1e6];

/**
 * Stacked bars: uPlot draws each series from 0, so series are given their running sums and drawn
 * top of the stack first; each covers the ones below it except its own share. The legend and
 * the section's `raw` keep the plain per-series values.
 */
function stacked(raw) {
  const sums = [];
  let below = raw[0].map(() => 0);
  for (const values of raw) {
    below = values.map((v, i) => below[i] + v);
    sums.push(below);
  }
  return sums;
}

/** uPlot's options: bars at the stack's running sums, the legend at each series' own count. */
function plotOptions({ xs, raw, series, order, granularity, unit, width }) {
  const step = granularity === 'hour' ? 3600 : 86400;
  const bars = uPlot.paths.bars({ size: [0.7, 40], align: 0 });
  return {
    width,
    height: 240,
    scales: {
      // Half a bucket of room on each side, so the first and last bars are whole.
      x: { time: true, range: () => [xs[0] - step / 2, xs[xs.length - 1] + step / 2] },
      // Counts: whole numbers, at least 0 to 4. Dollars: cents count, so no whole-number floor.
      y: {
        range: (_u, _min, max) =>
          unit === 'USD' ? [0, max > 0 ? max * 1.1 : 1] : [0, Math.max(4, Math.ceil(max * 1.1))],
      },
    },
    series: [
      {
        label: granularity === 'hour' ? 'hour (UTC)' : 'day (UTC)',
        value: (_u, v) =>
          v === null || v === undefined
            ? '—'
            : new Date(v * 1000)
                .toISOString()
                .slice(0, granularity === 'hour' ? 16 : 10)
                .replace('T', ' '),
      },
      ...order.map((i) => ({
        label: series[i][0],
        stroke: series[i][1],
        fill: series[i][1],
        width: 0,
        paths: bars,
        points: { show: false },
        // The legend shows this series' own count, not the running sum it is drawn at.
        value: (_u, _v, _s, idx) => (idx === null || idx === undefined ? '—' : String(raw[i][idx])),
      })),
    ],
    axes: [
      {},
      {
        label: `${unit} per ${granularity}`,
        incrs: unit === 'USD' ? undefined : INTEGER_STEPS,
        values: (_u, ticks) => ticks.map((v) => String(v)),
      },
    ],
    cursor: { points: { show: false } },
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
  };
}

/**
 * A plot of `rows` (buckets with a `start` and a count per series key) in a section named `name`
 * (data-plot), with the number of points and each series' total as data. `unit` names what the
 * y axis counts; `granularity` is hour or day.
 */
export function barPlot(name, title, { rows, totals, granularity, unit }, series) {
  const xs = rows.map((b) => Date.parse(b.start) / 1000);
  const raw = series.map(([key]) => rows.map((b) => b[key]));
  const sums = stacked(raw);
  const target = h('div.plot-canvas');
  const section = h(
    'section.plot',
    { 'data-plot': name, 'data-points': xs.length, 'data-granularity': granularity },
    h('h3', title),
    target,
    h(
      'table.totals',
      h(
        'tr',
        series.map(([key]) => h('th', key)),
      ),
      h(
        'tr',
        series.map(([key]) => h('td', { 'data-total': key }, String(totals[key]))),
      ),
    ),
  );
  const width = () => Math.max(320, Math.min(900, (target.clientWidth || 640) - 8));
  // Drawn in reverse: the full stack first, the first series last (in front).
  const order = series.map((_, i) => i).reverse();
  const plot = new uPlot(
    plotOptions({ xs, raw, series, order, granularity, unit, width: width() }),
    [xs, ...order.map((i) => sums[i])],
    target,
  );
  // Until the pointer picks a bucket, the legend shows the latest one (not "--").
  const latest = () => plot.setLegend({ idx: xs.length - 1 });
  latest();
  plot.over.addEventListener('mouseleave', () => requestAnimationFrame(latest));
  // Drawn once the section is in the page, when its width is known.
  requestAnimationFrame(() => {
    plot.setSize({ width: width(), height: 240 });
    latest();
  });
  section.plot = plot;
  section.raw = Object.fromEntries(series.map(([key], i) => [key, raw[i]]));
  return section;
}

/** A plot of an answer of GET /admin/v1/usage: codes by outcome, or requests billed and refunded. */
export function usagePlot(name, title, usage, series) {
  const unit = series === BILLING_SERIES ? 'requests' : 'codes';
  return barPlot(
    name,
    title,
    { rows: usage.buckets, totals: usage.totals, granularity: usage.granularity, unit },
    series,
  );
}

/** Money across customers per day (GET /admin/v1/money): what came in, was charged, was refunded. */
export const MONEY_SERIES = [
  ['topups', '#2e7d32'],
  ['charges', '#1565c0'],
  ['refunds', '#ef6c00'],
];

export function moneyPlot(name, title, money) {
  const rows = money.days.map((d) => ({
    start: `${d.date}T00:00:00Z`,
    topups: d.topups_usd,
    charges: d.charges_usd,
    refunds: d.refunds_usd,
  }));
  const totals = {
    topups: money.totals.topups_usd,
    charges: money.totals.charges_usd,
    refunds: money.totals.refunds_usd,
  };
  return barPlot(name, title, { rows, totals, granularity: 'day', unit: 'USD' }, MONEY_SERIES);
}
