// A customer's webhook event log (with a redeliver button) and statement (with its plot and a
// CSV download) on the customer page: what the merchant sees through GET /v1/events and
// GET /v1/statements, for the operator.
import { api, qs } from './api.js';
import { barPlot } from './charts.js';
import { h, pagedTable, put, statusLine, table, usd, when } from './dom.js';
import { EVENT_STATES } from './vocabulary.js';

const modeSelect = (name, value, onchange) =>
  h(
    'select',
    { name, 'aria-label': name, onchange },
    ['live', 'test'].map((m) => h('option', { value: m, selected: m === value }, m)),
  );

export function attemptLine(a) {
  const what = a.error === null ? String(a.status) : a.status === null ? a.error : `${a.status} ${a.error}`;
  return h(
    'div.attempt',
    { 'data-attempt': a.redelivery ? 'redelivery' : 'scheduled' },
    `${when(a.at)} · ${what} · ${a.duration_ms} ms${a.redelivery ? ' · redelivery' : ''}`,
  );
}

const stateFilter = (onchange) =>
  h(
    'select',
    { 'aria-label': 'event state', onchange: (e) => onchange(e.target.value) },
    ['', ...EVENT_STATES].map((s) => h('option', { value: s }, s || 'any state')),
  );

/** The event table's columns; `redeliver(button, id)` runs the button. */
function eventColumns(redeliver) {
  return [
    ['Event', (e) => h('code', e.id)],
    ['Type', (e) => e.event],
    ['Job', (e) => h('a', { href: `#/jobs/${e.job_id}` }, e.job_id)],
    ['State', (e) => h('span', { class: `badge ${e.state}`, 'data-state': e.state }, e.state)],
    ['Attempts', (e) => (e.attempts.length ? e.attempts.map(attemptLine) : h('span.muted', 'none yet'))],
    ['Next attempt', (e) => when(e.next_attempt_at)],
    ['Created', (e) => when(e.created_at)],
    [
      '',
      (e) => {
        const b = h(
          'button',
          { type: 'button', 'data-redeliver': e.id, 'data-needs-enabled': true, write: true },
          'Redeliver',
        );
        b.addEventListener('click', () => redeliver(b, e.id));
        return b;
      },
    ],
  ];
}

/** Queues a redelivery after a confirmation; the button cannot send twice while it runs. */
export async function askRedelivery(button, eventId, status, reload) {
  if (!confirm(`Send ${eventId} once more to the customer's current webhook URL?`)) return;
  button.disabled = true;
  try {
    await api('POST', `/admin/v1/events/${encodeURIComponent(eventId)}/redeliver`);
    status.ok(`Redelivery of ${eventId} queued: its attempt appears below once sent.`);
    // Read again shortly: the worker sends it at once.
    setTimeout(reload, 600);
  } catch (err) {
    status.error(err);
    button.disabled = false;
  }
}

/** The event log of customer `id`: newest first, a page at a time, each with its attempts. */
export function eventsSection(id, defaultMode) {
  let mode = defaultMode;
  let state = '';
  const status = statusLine();
  const body = h('div');
  const redeliver = (button, eventId) => askRedelivery(button, eventId, status, () => reload());
  const columns = eventColumns(redeliver);
  const { tbody, more, reset } = pagedTable({
    fetchPage: (cursor) =>
      api('GET', `/admin/v1/customers/${id}/events${qs({ mode, state, cursor, limit: 20 })}`),
    rowsOf: (page) => page.events,
    row: (e) =>
      h(
        'tr',
        { 'data-event': e.id },
        columns.map(([, cell]) => h('td', cell(e))),
      ),
    empty: 'no events',
    colspan: columns.length,
    status,
  });
  const reload = () => reset().catch((err) => status.error(err));
  put(
    body,
    h(
      'table',
      { 'data-table': 'events' },
      h(
        'thead',
        h(
          'tr',
          columns.map(([t]) => h('th', t)),
        ),
      ),
      tbody,
    ),
  );
  const stateSelect = stateFilter((value) => {
    state = value;
    reload();
  });
  const section = h(
    'section',
    { 'data-section': 'events' },
    h(
      'h3',
      'Webhook events ',
      modeSelect('events-mode', mode, (e) => {
        mode = e.target.value;
        reload();
      }),
      ' ',
      stateSelect,
      ' ',
      h('button.link', { type: 'button', onclick: () => reload() }, 'Refresh'),
    ),
    status.el,
    body,
    more,
  );
  section.ready = reload();
  return section;
}

const STATEMENT_SERIES = [
  ['requests_included', '#2e7d32'],
  ['requests_overage', '#1565c0'],
  ['requests_refunded', '#ef6c00'],
];

const money = (k) => (d) => usd(d[k]);
const STATEMENT_COLUMNS = [
  ['Day', (d) => d.date ?? 'total'],
  ['Included', (d) => d.requests_included],
  ['Overage', (d) => d.requests_overage],
  ['Refunded', (d) => d.requests_refunded],
  ['Activated', (d) => d.codes.activated],
  ['Used', (d) => d.codes.code_used],
  ['Invalid', (d) => d.codes.invalid_code],
  ['Bad player', (d) => d.codes.bad_player],
  ['Failed', (d) => d.codes.failed],
  ['Charged', money('charged_usd')],
  ['Top-ups', money('topups_usd')],
  ['Adjustments', money('adjustments_usd')],
  ['Opening', money('opening_balance_usd')],
  ['Closing', money('closing_balance_usd')],
];

async function downloadCsv(id, mode, from, to) {
  const res = await fetch(`/admin/v1/customers/${id}/statements${qs({ mode, from, to })}`, {
    credentials: 'same-origin',
    headers: { 'X-Console': '1', Accept: 'text/csv' },
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  const name =
    /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? 'statement.csv';
  const url = URL.createObjectURL(await res.blob());
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** The statement of customer `id` per UTC day: a plot, a table with totals, a CSV download. */
export function statementSection(id, defaultMode) {
  let mode = defaultMode;
  const status = statusLine();
  const body = h('div');
  const dayInput = (name) => h('input', { type: 'date', name, 'aria-label': name });
  const from = dayInput('from');
  const to = dayInput('to');
  const load = async () => {
    const s = await api(
      'GET',
      `/admin/v1/customers/${id}/statements${qs({ mode, from: from.value, to: to.value })}`,
    );
    from.value = s.from;
    to.value = s.to;
    const rows = s.days.map((d) => ({ ...d, start: `${d.date}T00:00:00Z` }));
    const totals = Object.fromEntries(STATEMENT_SERIES.map(([k]) => [k, s.totals[k]]));
    put(
      body,
      barPlot(
        'statement',
        `Requests per day, ${s.mode}, ${s.from} to ${s.to}`,
        { rows, totals, granularity: 'day', unit: 'requests' },
        STATEMENT_SERIES,
      ),
      // Every day's row is one click away: the page stays short.
      h(
        'details',
        { 'data-details': 'statement-days' },
        h('summary', `Every day, ${s.from} to ${s.to}, with the totals`),
        table(STATEMENT_COLUMNS, [...s.days, s.totals], { 'data-table': 'statement' }),
      ),
    );
  };
  const reload = () => load().catch((err) => status.error(err));
  const section = h(
    'section',
    { 'data-section': 'statement' },
    h(
      'h3',
      'Statement ',
      modeSelect('statement-mode', mode, (e) => {
        mode = e.target.value;
        reload();
      }),
    ),
    h(
      'form.inline',
      {
        'data-form': 'statement',
        onsubmit: (e) => {
          e.preventDefault();
          reload();
        },
      },
      h('label', 'from ', from),
      h('label', 'to ', to),
      h('button', { type: 'submit' }, 'Show'),
      h(
        'button',
        {
          type: 'button',
          'data-download': 'statement',
          onclick: () => downloadCsv(id, mode, from.value, to.value).catch((err) => status.error(err)),
        },
        'Download CSV',
      ),
    ),
    status.el,
    body,
  );
  section.ready = reload();
  return section;
}
