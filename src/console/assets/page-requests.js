// The request log: refused and failed public API answers and why, newest first, across customers
// or for one, filtered by customer (id or name), player, day, mode, status, error code, request id and
// time, with the matching rows counted by error code above the list (each count filters by its
// code); a row links to its customer and its job. And the header's search box, which takes a
// request, job, event or player id and goes to what it names.
import { api, qs } from './api.js';
import { formValues, h, pagedTable, put, statusLine, when } from './dom.js';

const hashParams = () => new URLSearchParams(location.hash.split('?')[1] ?? '');
const toIso = (local) => (local ? `${local.length === 16 ? `${local}:00` : local}Z` : '');
const toLocal = (iso) => (iso ? iso.replace(/Z$/, '').slice(0, 16) : '');
const FILTERS = [
  'customer_id',
  'customer',
  'player_id',
  'day',
  'mode',
  'status',
  'error_code',
  'request_id',
  'since',
];

/** A redeem's outcomes as `bad_player ×1, failed ×2`. */
const outcomesText = (outcomes) =>
  Object.entries(outcomes ?? {})
    .map(([status, n]) => `${status} ×${n}`)
    .join(', ');

/** The log's columns; `withCustomer` false on a customer's own page. */
function columns(withCustomer) {
  return [
    ['At', (r) => when(r.at)],
    withCustomer && [
      'Customer',
      (r) =>
        r.customer_id === null
          ? h('span.muted', 'unidentified')
          : h(
              'a',
              { href: `#/customers/${r.customer_id}` },
              r.customer_name ?? '',
              h('span.muted', ` #${r.customer_id}`),
            ),
    ],
    [
      'Key',
      (r) =>
        r.key_prefix ? [h('code', r.key_prefix), r.key_label ? h('span.muted', ` ${r.key_label}`) : ''] : '—',
    ],
    ['Mode', (r) => r.mode ?? '—'],
    ['Request', (r) => h('code', `${r.method} ${r.path}`)],
    ['Status', (r) => h('span', { class: `badge ${r.status >= 500 ? 'failed' : 'refused'}` }, r.status)],
    ['Error code', (r) => r.error_code ?? '—'],
    ['Why', (r) => h('span', { 'data-why': '' }, outcomesText(r.outcomes) || r.message || '—')],
    [
      'Player',
      (r) =>
        r.player_id ? h('a', { href: `#/requests${qs({ player_id: r.player_id })}` }, r.player_id) : '—',
    ],
    ['Job', (r) => (r.job_id ? h('a', { href: `#/jobs/${r.job_id}` }, h('code', r.job_id)) : '—')],
    ['Request id', (r) => h('code', { 'data-request-id': r.request_id }, r.request_id)],
    ['Address', (r) => r.ip],
    ['ms', (r) => r.duration_ms],
  ].filter(Boolean);
}

/** A table of the log for `filter`, a page at a time; `ready` resolves after the first page. */
function logTable(filter, withCustomer) {
  const cols = columns(withCustomer);
  const status = statusLine();
  const counts = h('p.counts', { 'data-counts': '' });
  const { tbody, more, load } = pagedTable({
    fetchPage: async (cursor) => {
      const page = await api('GET', `/admin/v1/requests${qs({ ...filter, cursor, limit: 50 })}`);
      if (!cursor) put(counts, countsLine(page, filter));
      return page;
    },
    rowsOf: (page) => page.requests,
    row: (r) =>
      h(
        'tr',
        { 'data-status': r.status },
        cols.map(([, cell]) => h('td', cell(r))),
      ),
    empty: 'no refused or failed requests',
    colspan: cols.length,
    status,
    label: 'Older requests',
  });
  const el = h(
    'div',
    status.el,
    counts,
    h(
      'table',
      { 'data-table': 'requests' },
      h(
        'thead',
        h(
          'tr',
          cols.map(([t]) => h('th', t)),
        ),
      ),
      tbody,
    ),
    more,
  );
  return { el, ready: load().catch(status.error) };
}

/** `6 refused or failed: not_found ×3 · no_stock ×2`, each count a link filtering by its code. */
function countsLine(page, filter) {
  const c = page.counts;
  if (!c || c.total === 0) return [];
  const base = filter.customer_id ? { customer_id: filter.customer_id } : filter;
  const parts = c.by_error_code.map((e, i) => [
    i > 0 ? ' · ' : '',
    e.error_code === null
      ? h('span', { 'data-code': '' }, `no error code ×${e.count}`)
      : h(
          'a',
          {
            href: `#/requests${qs({ ...base, error_code: e.error_code, cursor: undefined })}`,
            'data-code': e.error_code,
          },
          `${e.error_code} ×${e.count}`,
        ),
  ]);
  return [
    h('strong', `${c.total}${c.complete ? '' : '+'} refused or failed${page.day ? ` on ${page.day}` : ''}: `),
    ...parts,
  ];
}

function filterForm(f) {
  const input = (name, placeholder, attrs = {}) =>
    h('input', { name, placeholder, value: f[name], 'aria-label': placeholder, ...attrs });
  const form = h(
    'form.filters',
    {
      onsubmit: (e) => {
        e.preventDefault();
        const v = formValues(form);
        location.hash = `#/requests${qs({ ...v, since: toIso(v.since) })}`;
      },
    },
    f.customer_id ? input('customer_id', 'customer id', { inputmode: 'numeric' }) : '',
    input('customer', 'customer id or name'),
    input('player_id', 'player id', { inputmode: 'numeric', size: 14 }),
    input('day', 'day (YYYY-MM-DD or today)', { size: 22 }),
    h(
      'select',
      { name: 'mode', 'aria-label': 'mode' },
      [
        ['', 'any mode'],
        ['live', 'live'],
        ['test', 'test'],
      ].map(([v, label]) => h('option', { value: v, selected: f.mode === v }, label)),
    ),
    input('status', 'status (404, 4xx, 5xx)', { size: 16 }),
    input('error_code', 'error code'),
    input('request_id', 'request id', { size: 30 }),
    h(
      'label',
      'since (UTC) ',
      h('input', { type: 'datetime-local', name: 'since', value: toLocal(f.since) }),
    ),
    h('button', { type: 'submit' }, 'Filter'),
  );
  return form;
}

export async function render(main) {
  const p = hashParams();
  const f = Object.fromEntries(FILTERS.map((k) => [k, p.get(k) ?? '']));
  const log = logTable(f, true);
  put(
    main,
    h('header.page', h('h2', 'Requests')),
    h(
      'p.muted',
      'Public API answers with status 400 or above: what each request was and why it failed (no bodies, keys or codes). Kept 7 days by default, at most 10,000 a customer a day; the unidentified callers are sampled.',
    ),
    filterForm(f),
    log.el,
  );
  await log.ready;
}

/** The customer page's section: the same log for that customer. */
export function requestsSection(customerId) {
  const log = logTable({ customer_id: customerId }, false);
  const el = h(
    'section',
    { 'data-section': 'requests' },
    h(
      'h3',
      'Refused and failed requests ',
      h('a', { href: `#/requests?customer_id=${customerId}` }, 'all →'),
    ),
    log.el,
  );
  return Object.assign(el, { ready: log.ready });
}

/** Where an id found by GET /admin/v1/lookup leads, or a sentence saying why nowhere. */
export function targetOf(r) {
  if (r.kind === null) return { message: `“${r.q}” is not a request, job, event or player id` };
  if (!r.found) return { message: `no ${r.kind} ${r.q}` };
  if (r.kind === 'request')
    return r.logged > 0 || !r.job_id
      ? { hash: `#/requests${qs({ request_id: r.q })}` }
      : { hash: `#/jobs/${r.job_id}` };
  if (r.kind === 'job') return { hash: `#/jobs/${r.job_id}` };
  // An event's deliveries are shown on its job's page.
  if (r.kind === 'event') return { hash: `#/jobs/${r.job_id}` };
  return { hash: `#/jobs${qs({ player_id: r.player_id })}` };
}

/** The header's search box. */
export function searchBox() {
  const input = h('input', {
    type: 'search',
    name: 'q',
    placeholder: 'req_… job_… evt_… or player id',
    'aria-label': 'find by id',
    size: 28,
  });
  const note = h('span.search-note', { role: 'status' });
  const form = h(
    'form.search',
    {
      onsubmit: async (e) => {
        e.preventDefault();
        const q = input.value.trim();
        if (!q) return;
        put(note);
        try {
          const target = targetOf(await api('GET', `/admin/v1/lookup${qs({ q })}`));
          if (target.hash) {
            input.value = '';
            location.hash = target.hash;
          } else put(note, target.message);
        } catch (err) {
          put(note, err.message);
        }
      },
    },
    input,
    h('button', { type: 'submit' }, 'Find'),
    note,
  );
  return form;
}
