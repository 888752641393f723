// Webhooks across customers (issue 36): the event log of every customer at once, failed events
// first (every automatic attempt used), with the receiver's last error and a redeliver button;
// and, on a customer's page, its registered receivers (query values masked) with their last 24
// hours. States are the event log's three: pending, delivered, failed.
import { api, qs } from './api.js';
import { h, put, statusLine, table, when } from './dom.js';
import { askRedelivery, attemptLine } from './page-customer-reconcile.js';
import { EVENT_STATES } from './vocabulary.js';

// The event log's states, failed first (the page's reason to exist), then every state at once.
const STATES = ['failed', ...EVENT_STATES.filter((s) => s !== 'failed'), 'any'];

function filtersOf() {
  const p = new URLSearchParams(location.hash.split('?')[1] ?? '');
  return {
    state: p.get('state') ?? 'failed',
    mode: p.get('mode') ?? '',
    customer_id: p.get('customer_id') ?? '',
  };
}

const lastError = (e) =>
  e.last_error
    ? h('span', { 'data-cell': 'last-error' }, e.last_error.message)
    : h('span.muted', e.attempts.length ? '—' : 'not attempted yet');

function eventColumns(status, rerender) {
  return [
    ['Created', (e) => when(e.created_at)],
    [
      'Customer',
      (e) => h('a', { href: `#/customers/${e.customer_id}` }, `${e.customer_name} #${e.customer_id}`),
    ],
    ['Mode', (e) => e.mode],
    ['Event', (e) => [h('code', e.id), h('div.muted', e.event)]],
    ['Job', (e) => h('a', { href: `#/jobs/${e.job_id}` }, e.job_id)],
    ['State', (e) => h('span', { class: `badge ${e.state}`, 'data-state': e.state }, e.state)],
    ['Receiver said', lastError],
    ['Attempts', (e) => (e.attempts.length ? e.attempts.map(attemptLine) : h('span.muted', 'none yet'))],
    ['Next attempt', (e) => when(e.next_attempt_at)],
    [
      '',
      (e) => {
        const b = h('button', { type: 'button', 'data-redeliver': e.id, write: true }, 'Redeliver');
        b.addEventListener('click', () => askRedelivery(b, e.id, status, rerender));
        return b;
      },
    ],
  ];
}

function filterForm(f, main) {
  const form = h(
    'form.inline',
    {
      'data-form': 'webhook-filters',
      onsubmit: (e) => {
        e.preventDefault();
        const v = Object.fromEntries(new FormData(form));
        const hash = `#/webhooks${qs({ state: v.state, mode: v.mode, customer_id: v.customer_id.trim() })}`;
        // The same hash fires no hashchange: the page is rendered again here.
        if (location.hash === hash) render(main);
        else location.hash = hash;
      },
    },
    h(
      'select',
      { name: 'state', 'aria-label': 'event state' },
      STATES.map((s) => h('option', { value: s, selected: s === f.state }, s === 'any' ? 'any state' : s)),
    ),
    h(
      'select',
      { name: 'mode', 'aria-label': 'mode' },
      ['', 'live', 'test'].map((m) =>
        h('option', { value: m, selected: m === f.mode }, m || 'live and test'),
      ),
    ),
    h('input', {
      name: 'customer_id',
      value: f.customer_id,
      inputmode: 'numeric',
      placeholder: 'customer id',
      'aria-label': 'customer id',
    }),
    h('button', { type: 'submit' }, 'Show'),
  );
  return form;
}

export async function render(main) {
  const f = filtersOf();
  const status = statusLine();
  const tbody = h('tbody');
  const more = h('button', { type: 'button', hidden: true }, 'More');
  let cursor = null;
  const columns = eventColumns(status, () => render(main));
  const load = async () => {
    const state = f.state === 'any' ? '' : f.state;
    const page = await api('GET', `/admin/v1/events${qs({ ...f, state, cursor, limit: 50 })}`);
    for (const e of page.events)
      tbody.append(
        h(
          'tr',
          { 'data-event': e.id },
          columns.map(([, cell]) => h('td', cell(e))),
        ),
      );
    if (!tbody.children.length)
      tbody.append(
        h(
          'tr',
          h(
            'td.muted',
            { colspan: columns.length },
            f.state === 'any' ? 'no events' : `no ${f.state} events`,
          ),
        ),
      );
    cursor = page.next_cursor;
    more.hidden = !cursor;
  };
  more.addEventListener('click', () => load().catch(status.error));
  const form = filterForm(f, main);
  put(
    main,
    h('header.page', h('h2', 'Webhooks')),
    h(
      'p.muted',
      'Events of every customer. failed: every automatic attempt was used and none got a 2xx; pending: an attempt is still due; delivered: an attempt got a 2xx.',
    ),
    form,
    status.el,
    h(
      'table',
      { 'data-table': 'webhook-events' },
      h(
        'thead',
        h(
          'tr',
          columns.map(([t]) => h('th', t)),
        ),
      ),
      tbody,
    ),
    more,
  );
  await load();
}

const rate = (w) =>
  w.success_rate === null
    ? 'nothing attempted'
    : `${Math.round(w.success_rate * 1000) / 10}% (${w.delivered}/${w.attempted})`;

/** A customer's registered receivers with their last 24 hours (section of the customer page). */
export function receiversSection(id) {
  const body = h('div', h('p.muted', 'Loading…'));
  const section = h(
    'section',
    { id: 'webhooks', 'data-section': 'receivers' },
    h('h3', 'Webhook receivers'),
    body,
  );
  section.ready = api('GET', `/admin/v1/customers/${id}/webhooks`)
    .then((r) =>
      put(
        body,
        table(
          [
            ['Mode', ([m]) => m],
            [
              'URL',
              ([, w]) => (w ? h('code', { 'data-cell': 'url' }, w.url) : h('span.muted', 'none registered')),
            ],
            ['Registered', ([, w]) => (w ? when(w.registered_at) : '—')],
            [
              `Delivered, last ${r.window_hours} h`,
              ([, w]) => (w ? h('span', { 'data-cell': 'rate' }, rate(w)) : '—'),
            ],
            ['Failures in a row', ([, w]) => (w ? w.consecutive_failures : '—')],
            [
              '',
              ([m, w]) =>
                w
                  ? h(
                      'a',
                      { href: `#/webhooks${qs({ state: 'failed', mode: m, customer_id: id })}` },
                      'failed events',
                    )
                  : '',
            ],
          ],
          Object.entries(r.webhooks),
          { 'data-table': 'receivers' },
        ),
      ),
    )
    .catch((err) => put(body, h('p.status', { 'data-state': 'error' }, `Could not load: ${err.message}`)));
  return section;
}
