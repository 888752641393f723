// A customer's health, live and test side by side (the customer page's first section): each
// mode's webhook receiver (URL, delivered over the last day, failures in a row, failing since)
// and its refusals today by error code, the mode in trouble first. Each count links to the
// request log filtered by it.
import { qs } from './api.js';
import { h, table, when } from './dom.js';

const rate = (w) =>
  w.success_rate === null
    ? 'nothing attempted'
    : `${Math.round(w.success_rate * 1000) / 10}% (${w.delivered}/${w.attempted})`;

function refusals(id, day, r) {
  if (r.total === 0) return h('span.muted', 'none');
  return r.by_error_code.map((c, i) => [
    i > 0 ? ' · ' : '',
    h(
      'a',
      {
        href: `#/requests${qs({ customer_id: id, day, error_code: c.error_code ?? undefined })}`,
        'data-code': c.error_code ?? '',
      },
      `${c.error_code ?? 'no error code'} ×${c.count}`,
    ),
  ]);
}

/** The section for `health` (GET /admin/v1/customers/{id}/health). */
export function healthSection(id, health) {
  const first = health.trouble_first ?? 'live';
  const modes = [first, first === 'live' ? 'test' : 'live'];
  return h(
    'section',
    { 'data-section': 'health' },
    h('h3', 'Health ', h('span.muted', `(${health.day}, receivers over the last ${health.window_hours} h)`)),
    table(
      [
        [
          'Mode',
          (m) => [
            m,
            m === health.trouble_first
              ? h('span.badge.failed', { 'data-trouble': '' }, ' look here first')
              : '',
          ],
        ],
        [
          'Webhook receiver',
          (m) => {
            const w = health.modes[m].webhook;
            return w ? h('code', { 'data-cell': 'url' }, w.url) : h('span.muted', 'none registered');
          },
        ],
        ['Delivered', (m) => (health.modes[m].webhook ? rate(health.modes[m].webhook) : '—')],
        ['Failures in a row', (m) => health.modes[m].webhook?.consecutive_failures ?? '—'],
        ['Failing since', (m) => when(health.modes[m].webhook?.failing_since ?? null)],
        [
          'Refused today',
          (m) =>
            h('span', { 'data-cell': 'refusals' }, refusals(id, health.day, health.modes[m].refusals_today)),
        ],
      ],
      modes,
      { 'data-table': 'health' },
    ),
  );
}
