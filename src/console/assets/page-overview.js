// Overview: what needs attention (queue, quarantine, webhooks), the public API's refusals today
// by error code (live and test side by side, the mode in trouble first), and redeems per hour
// (24 h) and per day (30 days) by outcome, and billed against refunded; all of one mode (by
// default the one in trouble, else live), with a line comparing both modes.
import { api, qs } from './api.js';
import { BILLING_SERIES, moneyPlot, OUTCOME_SERIES, usagePlot } from './charts.js';
import { csvButton, h, put, statusLine, usd, when } from './dom.js';

const card = (name, title, value, detail, href) =>
  h(
    'div.card',
    { 'data-card': name },
    h('h3', title),
    h('p.big', href ? h('a', { href }, String(value)) : String(value)),
    h('p.muted', detail),
  );

/** How much a mode needs looking at: quarantined codes and failing or failed webhooks. */
const trouble = (o) => o.quarantined_codes + o.webhooks.failed_24h + o.webhooks.failing;

/** Both modes in one line, each a link to its overview: `live: 0 quarantined · … — test: …`. */
const modesLine = (live, test) =>
  h(
    'p.modes',
    { 'data-modes': '' },
    [
      ['live', live],
      ['test', test],
    ].map(([m, o], i) => [
      i > 0 ? ' — ' : '',
      h('a', { href: `#/overview?mode=${m}` }, m),
      `: ${o.quarantined_codes} quarantined · ${o.webhooks.failed_24h} failed webhooks (24 h) · ${o.webhooks.failing} failing · ${o.queue.queued} queued · ${o.refusals_today.total} refused today`,
    ]),
  );

/** The mode to show first: more trouble, else more refusals today, else live. */
const troubleFirstOf = (live, test) =>
  trouble(test) > trouble(live) ||
  (trouble(test) === trouble(live) && test.refusals_today.total > live.refusals_today.total)
    ? 'test'
    : 'live';

/**
 * Today's refusals by error code, one column a mode, the mode in trouble first (more trouble, else
 * more refusals): each count leads to the request log of that day, mode and code.
 */
function refusalsSection(live, test, first) {
  const modes =
    first === 'test'
      ? [
          ['test', test],
          ['live', live],
        ]
      : [
          ['live', live],
          ['test', test],
        ];
  const totals = new Map();
  for (const [, o] of modes)
    for (const c of o.refusals_today.by_error_code)
      totals.set(c.error_code, (totals.get(c.error_code) ?? 0) + c.count);
  const codes = [...totals.keys()].sort(
    (a, b) => totals.get(b) - totals.get(a) || String(a).localeCompare(String(b)),
  );
  const cell = (m, o, code) => {
    const n = o.refusals_today.by_error_code.find((c) => c.error_code === code)?.count ?? 0;
    if (n === 0) return h('span.muted', '0');
    const filter = { day: o.refusals_today.day, mode: m, error_code: code ?? undefined };
    return h('a', { href: `#/requests${qs(filter)}`, 'data-count': `${m}:${code ?? ''}` }, String(n));
  };
  const total = (m, o) =>
    h(
      'a',
      { href: `#/requests${qs({ day: o.refusals_today.day, mode: m })}`, 'data-total': m },
      `${o.refusals_today.total}${o.refusals_today.complete ? '' : '+'}`,
    );
  return h(
    'section',
    { 'data-section': 'refusals' },
    h(
      'h3',
      `Refused today `,
      h('span.muted', `(${live.refusals_today.day}, public API answers of 400 or above)`),
    ),
    h(
      'table',
      { 'data-table': 'refusals' },
      h(
        'thead',
        h(
          'tr',
          h('th', 'Error code'),
          modes.map(([m]) => h('th', m)),
        ),
      ),
      h(
        'tbody',
        codes.map((code) =>
          h(
            'tr',
            { 'data-code': code ?? '' },
            h('td', code ?? h('span.muted', 'no error code (a redeem where no code activated)')),
            modes.map(([m, o]) => h('td', cell(m, o, code))),
          ),
        ),
        h(
          'tr.total',
          h('td', h('strong', 'all')),
          modes.map(([m, o]) => h('td', total(m, o))),
        ),
      ),
    ),
  );
}

export async function render(main) {
  // Every card and plot is of the mode chosen ('all': both together). Unless one is asked for,
  // the overview opens on the mode in trouble (live when neither or both are), so a test mode on
  // fire is not hidden behind live's zeros; a line above the cards shows both modes.
  const asked = new URLSearchParams(location.hash.split('?')[1] ?? '').get('mode');
  const [live, test] = await Promise.all([
    api('GET', `/admin/v1/overview${qs({ mode: 'live' })}`),
    api('GET', `/admin/v1/overview${qs({ mode: 'test' })}`),
  ]);
  const chosen = asked ?? (trouble(test) > trouble(live) ? 'test' : 'live');
  const mode = chosen === 'all' ? '' : chosen;
  const [o, hourly, daily, enc, money] = await Promise.all([
    chosen === 'live' ? live : chosen === 'test' ? test : api('GET', '/admin/v1/overview'),
    api('GET', `/admin/v1/usage${qs({ granularity: 'hour', mode })}`),
    api('GET', `/admin/v1/usage${qs({ granularity: 'day', mode })}`),
    api('GET', '/admin/v1/encryption'),
    api('GET', `/admin/v1/money${qs({ mode })}`),
  ]);
  const modeSelect = h(
    'select',
    {
      'aria-label': 'mode',
      'data-select': 'mode',
      onchange: (e) => {
        location.hash = `#/overview?mode=${e.target.value}`;
      },
    },
    ['live', 'test', 'all'].map((m) =>
      h('option', { value: m, selected: m === chosen }, m === 'all' ? 'live and test' : m),
    ),
  );
  put(
    main,
    h('header.page', h('h2', 'Overview'), modeSelect),
    modesLine(live, test),
    h(
      'div.cards',
      card(
        'queue',
        'Job queue',
        o.queue.queued,
        `${o.queue.running} running · oldest queued ${when(o.queue.oldest_queued_at)}`,
        `#/jobs${qs({ status: 'queued', mode })}`,
      ),
      card(
        'quarantine',
        'Quarantined codes',
        o.quarantined_codes,
        'outcome unknown, held until checked',
        '#/quarantine',
      ),
      // The event log's words (pending, delivered, failed), as on the Webhooks page it links to.
      card(
        'webhooks',
        'Failed webhooks, 24 h',
        o.webhooks.failed_24h,
        `${o.webhooks.pending} pending, ${o.webhooks.failing} of them after a failed attempt`,
        `#/webhooks${qs({ state: 'failed', mode })}`,
      ),
      card('customers', 'Customers', o.customers, '', '#/customers'),
      // Key rotation (docs/reference/operators-and-audit.md#encryption-key-rotation): key ids are public fingerprints, never keys.
      card(
        'encryption',
        'Encryption key',
        enc.current_key_id,
        `rotation ${enc.rotation} · rows by key: ${
          Object.entries(enc.rows_by_key_id)
            .map(([kid, n]) => `${kid} ${n}`)
            .join(', ') || 'none'
        }`,
      ),
    ),
    refusalsSection(live, test, troubleFirstOf(live, test)),
    h(
      'div.plots',
      usagePlot('hourly', 'Redeems per hour, last 24 hours, by outcome', hourly, OUTCOME_SERIES),
      usagePlot('daily', 'Redeems per day, last 30 days, by outcome', daily, OUTCOME_SERIES),
      usagePlot('billing', 'Billed and refunded requests per day, last 30 days', daily, BILLING_SERIES),
      moneyPlot('money', 'Money per day across customers, USD (top-ups, charges, refunds)', money),
    ),
    h(
      'p.muted',
      `Money ${money.from} to ${money.to}: ${usd(money.totals.topups_usd)} topped up, ${usd(money.totals.charges_usd)} charged, ${usd(money.totals.refunds_usd)} refunded, ${usd(money.totals.adjustments_usd)} adjusted. `,
      csvButton('money', () => `/admin/v1/money${qs({ mode, format: 'csv' })}`, 'money.csv', statusLine()),
    ),
  );
}
