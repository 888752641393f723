// The request log (issue 36): refused and failed public API answers, newest first, across
// customers or for one, filtered by status, error code, request id and time; and the header's
// search box, which takes a request, job, event or player id and goes to what it names.
import { api, qs } from './api.js';
import { formValues, h, put, statusLine, when } from './dom.js';

const hashParams = () => new URLSearchParams(location.hash.split('?')[1] ?? '');
const toIso = (local) => (local ? `${local.length === 16 ? `${local}:00` : local}Z` : '');
const toLocal = (iso) => (iso ? iso.replace(/Z$/, '').slice(0, 16) : '');
const FILTERS = ['customer_id', 'status', 'error_code', 'request_id', 'since'];

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
    ['Key', (r) => (r.key_prefix ? h('code', r.key_prefix) : '—')],
    ['Mode', (r) => r.mode ?? '—'],
    ['Request', (r) => h('code', `${r.method} ${r.path}`)],
    ['Status', (r) => h('span', { class: `badge ${r.status >= 500 ? 'failed' : 'refused'}` }, r.status)],
    ['Error code', (r) => r.error_code ?? '—'],
    ['Request id', (r) => h('code', { 'data-request-id': r.request_id }, r.request_id)],
    ['Address', (r) => r.ip],
    ['ms', (r) => r.duration_ms],
  ].filter(Boolean);
}

/** A table of the log for `filter`, a page at a time; `ready` resolves after the first page. */
function logTable(filter, withCustomer) {
  const cols = columns(withCustomer);
  const status = statusLine();
  const tbody = h('tbody');
  const more = h('button', { type: 'button', hidden: true }, 'Older requests');
  let cursor = null;
  const load = async () => {
    try {
      const page = await api('GET', `/admin/v1/requests${qs({ ...filter, cursor, limit: 50 })}`);
      for (const r of page.requests)
        tbody.append(
          h(
            'tr',
            { 'data-status': r.status },
            cols.map(([, cell]) => h('td', cell(r))),
          ),
        );
      if (!tbody.children.length)
        tbody.append(h('tr', h('td.muted', { colspan: cols.length }, 'no refused or failed requests')));
      cursor = page.next_cursor;
      more.hidden = !cursor;
    } catch (err) {
      status.error(err);
    }
  };
  more.addEventListener('click', load);
  const el = h(
    'div',
    status.el,
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
  return { el, ready: load() };
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
    input('customer_id', 'customer id', { inputmode: 'numeric' }),
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
      'Public API answers with status 400 or above: what each request was (no bodies, keys or codes). Kept 7 days by default, at most 10,000 a customer a day.',
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
