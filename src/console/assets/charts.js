// Usage plots with uPlot (served from node_modules): one line per outcome, or billed against
// refunded, over the buckets of GET /admin/v1/usage. Under each plot, the totals as a table, so
// the numbers can be read (and checked) without the picture.
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

/**
 * A plot of `usage` (an answer of GET /admin/v1/usage) for the given series, in a section
 * named `name` (data-plot), with the number of points and each series' total as data.
 */
export function usagePlot(name, title, usage, series) {
  const xs = usage.buckets.map((b) => Date.parse(b.start) / 1000);
  const data = [xs, ...series.map(([key]) => usage.buckets.map((b) => b[key]))];
  const target = h('div.plot-canvas');
  const section = h(
    'section.plot',
    { 'data-plot': name, 'data-points': xs.length, 'data-granularity': usage.granularity },
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
        series.map(([key]) => h('td', { 'data-total': key }, String(usage.totals[key]))),
      ),
    ),
  );
  const width = () => Math.max(320, Math.min(900, (target.clientWidth || 640) - 8));
  const plot = new uPlot(
    {
      width: width(),
      height: 220,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      series: [
        { label: usage.granularity === 'hour' ? 'hour (UTC)' : 'day (UTC)' },
        ...series.map(([key, color]) => ({
          label: key,
          stroke: color,
          width: 2,
          points: { show: xs.length <= 31 },
        })),
      ],
      axes: [{}, { label: 'codes' }],
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    },
    data,
    target,
  );
  // Drawn once the section is in the page, when its width is known.
  requestAnimationFrame(() => plot.setSize({ width: width(), height: 220 }));
  section.plot = plot;
  return section;
}
