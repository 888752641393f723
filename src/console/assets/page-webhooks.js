// Webhooks across customers: the event log of every customer at once, failed events
// first (every automatic attempt used), with the receiver's last error and a redeliver button;
// and, on a customer's page, its registered receivers (query values masked) with their last 24
// hours. States are the event log's three: pending, delivered, failed.
import { api, qs } from './api.js';
import { h, pagedTable, put, statusLine, table, when } from './dom.js';
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
  const columns = eventColumns(status, () => render(main));
  const state = f.state === 'any' ? '' : f.state;
  const { tbody, more, load } = pagedTable({
    fetchPage: (cursor) => api('GET', `/admin/v1/events${qs({ ...f, state, cursor, limit: 50 })}`),
    rowsOf: (page) => page.events,
    row: (e) =>
      h(
        'tr',
        { 'data-event': e.id },
        columns.map(([, cell]) => h('td', cell(e))),
      ),
    empty: f.state === 'any' ? 'no events' : `no ${f.state} events`,
    colspan: columns.length,
    status,
  });
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

/**
 * A customer's registered receivers with their last 24 hours (section of the customer page), and
 * Remove (asks first): the merchant cannot remove a registration through the API.
 */
export function receiversSection(id) {
  const body = h('div', h('p.muted', 'Loading…'));
  const status = statusLine();
  const section = h(
    'section',
    { id: 'webhooks', 'data-section': 'receivers' },
    h('h3', 'Webhook receivers'),
    status.el,
    body,
  );
  const remove = (m) => async (e) => {
    e.target.disabled = true;
    try {
      const r = await api('DELETE', `/admin/v1/customers/${id}/webhooks/${m}`);
      status.ok(`Removed the ${m} webhook ${r.removed}.`);
      await load();
    } catch (err) {
      status.error(err);
      e.target.disabled = false;
    }
  };
  const load = () =>
    api('GET', `/admin/v1/customers/${id}/webhooks`)
      .then((r) => put(body, receiversTable(id, r, remove)))
      .catch((err) => put(body, h('p.status', { 'data-state': 'error' }, `Could not load: ${err.message}`)));
  section.ready = load();
  return section;
}

function receiversTable(id, r, remove) {
  return table(
    [
      ['Mode', ([m]) => m],
      ['URL', ([, w]) => (w ? h('code', { 'data-cell': 'url' }, w.url) : h('span.muted', 'none registered'))],
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
            ? [
                h(
                  'a',
                  { href: `#/webhooks${qs({ state: 'failed', mode: m, customer_id: id })}` },
                  'failed events',
                ),
                ' ',
                h(
                  'button',
                  {
                    type: 'button',
                    write: true,
                    'data-remove-webhook': m,
                    confirm: `Remove the ${m} webhook ${w.url}? The customer's ${m} jobs send no more events; pending ones are dropped.`,
                    onclick: remove(m),
                  },
                  'Remove',
                ),
              ]
            : '',
      ],
    ],
    Object.entries(r.webhooks),
    { 'data-table': 'receivers' },
  );
}
