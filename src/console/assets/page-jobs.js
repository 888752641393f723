// Jobs: the list filtered by customer, mode, status and creation time (newest first, a page at
// a time), and one job with its codes (last 4 characters only), billing and webhook deliveries.
import { api, qs } from './api.js';
import { csvButton, formValues, h, last4, pagedTable, put, statusLine, table, usd, when } from './dom.js';

const hashParams = () => new URLSearchParams(location.hash.split('?')[1] ?? '');
// <input type=datetime-local> holds a UTC time here (the console shows UTC everywhere).
const toIso = (local) => (local ? `${local.length === 16 ? `${local}:00` : local}Z` : '');
const toLocal = (iso) => (iso ? iso.replace(/Z$/, '').slice(0, 16) : '');

/**
 * The status badge: a job completes whatever its codes' outcomes, so a completed job where no
 * code activated, or with a quarantined code, gets a badge of its own.
 */
export function jobBadge(j) {
  if (j.attention === 'quarantined')
    return h('span', { class: 'badge quarantined', 'data-attention': 'quarantined' }, 'quarantined code');
  if (j.attention === 'nothing_activated')
    return h(
      'span',
      { class: 'badge none-activated', 'data-attention': 'nothing_activated' },
      'nothing activated',
    );
  return h('span', { class: `badge ${j.status}` }, j.status);
}

// The list's attention flag and counts, from one job's codes (the detail answer has no list row).
const done = (codes) => codes.filter((c) => c.state === 'done');
const unsettled = (c) => c.disposition === 'quarantined' && !c.settlement;
function attentionOf(j, codes) {
  if (codes.some(unsettled)) return 'quarantined';
  const finished = !['queued', 'running'].includes(j.status);
  return finished && codes.length && !codes.some((c) => c.status === 'activated')
    ? 'nothing_activated'
    : null;
}
function outcomeLine(codes) {
  const d = done(codes);
  const n = (f) => d.filter(f).length;
  return `${n((c) => c.status === 'activated')} activated · ${n((c) => c.billed && c.status !== 'activated')} billed failures · ${n(
    (c) => !c.billed && !unsettled(c),
  )} refunded · ${n(unsettled)} quarantined`;
}

/** The jobs list's columns: a header and how each job fills its cell. */
const LIST_COLUMNS = [
  ['Job', (j) => h('a', { href: `#/jobs/${j.job_id}` }, j.job_id)],
  [
    'Customer',
    (j) =>
      h(
        'a',
        { href: `#/customers/${j.customer_id}` },
        j.customer_name,
        h('span.muted', ` #${j.customer_id}`),
      ),
  ],
  ['Mode', (j) => j.mode],
  ['Kind', (j) => (j.async ? 'async' : 'sync')],
  ['Status', (j) => jobBadge(j)],
  ['Codes', (j) => `${j.done}/${j.codes}`],
  ['Activated', (j) => j.outcomes.activated],
  ['Billed failures', (j) => j.outcomes.billed_failures],
  ['Refunded', (j) => j.outcomes.refunded],
  ['Quarantined', (j) => j.outcomes.quarantined],
  ['Player', (j) => h('a', { href: `#/jobs?player_id=${j.player_id}` }, j.player_id)],
  ['Reference', (j) => j.reference ?? ''],
  ['Created', (j) => when(j.created_at)],
];

/** The jobs list's filters; submitting puts them in the page's address. */
function filterForm(f) {
  const select = (name, values) =>
    h(
      'select',
      { name, 'aria-label': name },
      ['', ...values].map((v) => h('option', { value: v, selected: v === f[name] }, v || `any ${name}`)),
    );
  const form = h(
    'form.filters',
    {
      onsubmit: (e) => {
        e.preventDefault();
        const v = formValues(form);
        location.hash = `#/jobs${qs({ ...v, from: toIso(v.from), to: toIso(v.to) })}`;
      },
    },
    h('input', {
      name: 'customer_id',
      placeholder: 'customer id',
      value: f.customer_id,
      inputmode: 'numeric',
      'aria-label': 'customer id',
    }),
    h('input', {
      name: 'player_id',
      placeholder: 'player id',
      value: f.player_id,
      inputmode: 'numeric',
      'aria-label': 'player id',
    }),
    select('mode', ['live', 'test']),
    select('status', ['queued', 'running', 'completed', 'failed', 'interrupted']),
    h('label', 'from (UTC) ', h('input', { type: 'datetime-local', name: 'from', value: toLocal(f.from) })),
    h('label', 'to (UTC) ', h('input', { type: 'datetime-local', name: 'to', value: toLocal(f.to) })),
    h('button', { type: 'submit' }, 'Filter'),
  );
  return form;
}

export async function renderList(main) {
  const p = hashParams();
  const f = {
    customer_id: p.get('customer_id') ?? '',
    mode: p.get('mode') ?? '',
    status: p.get('status') ?? '',
    player_id: p.get('player_id') ?? '',
    from: p.get('from') ?? '',
    to: p.get('to') ?? '',
  };
  const form = filterForm(f);
  const status = statusLine();
  const { tbody, more, load } = pagedTable({
    fetchPage: (cursor) => api('GET', `/admin/v1/jobs${qs({ ...f, cursor, limit: 50 })}`),
    rowsOf: (page) => page.jobs,
    row: (j) =>
      h(
        'tr',
        LIST_COLUMNS.map(([, cell]) => h('td', cell(j))),
      ),
    empty: 'no jobs',
    colspan: LIST_COLUMNS.length,
    status,
  });
  put(
    main,
    h(
      'header.page',
      h('h2', 'Jobs'),
      csvButton('jobs', () => `/admin/v1/jobs${qs({ ...f, format: 'csv' })}`, 'jobs.csv', status),
    ),
    form,
    status.el,
    h(
      'table',
      { 'data-table': 'jobs' },
      h(
        'thead',
        h(
          'tr',
          LIST_COLUMNS.map(([t]) => h('th', t)),
        ),
      ),
      tbody,
    ),
    more,
  );
  await load().catch(status.error);
}

export async function renderDetail(main, jobId) {
  const r = await api('GET', `/admin/v1/jobs/${encodeURIComponent(jobId)}`);
  const j = r.job;
  const b = r.billing;
  const dl = (pairs) =>
    h(
      'dl',
      pairs.map(([k, v]) => [h('dt', k), h('dd', v ?? '—')]),
    );
  put(
    main,
    h('header.page', h('h2', 'Job ', h('code', j.job_id)), h('a', { href: '#/jobs' }, '← all jobs')),
    dl([
      ['Customer', h('a', { href: `#/customers/${j.customer_id}` }, j.customer_id)],
      ['Mode', j.mode],
      ['Kind', j.async ? 'async' : 'sync'],
      ['Status', jobBadge({ ...j, attention: attentionOf(j, r.attempts) })],
      ['Outcomes', outcomeLine(r.attempts)],
      ['Player', j.player_id],
      ['Source', j.source],
      ['Reference', j.reference],
      ['Idempotency key', j.idempotency_key],
      // The request that created the job (its answer's X-Request-Id); its refusals, if any, are
      // in the request log.
      ['Request', j.request_id ? h('code', { 'data-request-id': j.request_id }, j.request_id) : null],
      ['Created', when(j.created_at)],
      ['Started', when(j.started_at)],
      ['Finished', when(j.finished_at)],
      ['Error', j.error ? `${j.error.error_code ?? ''} ${j.error.message ?? ''}` : null],
    ]),
    h('h3', 'Billing'),
    table(
      [
        ['Day', (x) => x.day],
        ['Rate', (x) => usd(x.rate_micros / 1e6)],
        ['Held (include / wallet)', (x) => `${x.hold_included} / ${x.hold_wallet}`],
        ['Captured', (x) => `${x.captured_included} / ${x.captured_wallet}`],
        ['Released', (x) => `${x.released_included} / ${x.released_wallet}`],
      ],
      [b],
      { 'data-table': 'billing' },
    ),
    h('h3', 'Codes'),
    table(
      [
        ['#', (c) => c.position],
        ['Code', (c) => last4(c.code_last4)],
        ['Category', (c) => c.category ?? '—'],
        ['State', (c) => c.state],
        ['Status', (c) => c.status ?? '—'],
        ['Disposition', (c) => c.disposition ?? '—'],
        ['Billed', (c) => (c.billed === null ? '—' : c.billed ? 'yes' : 'no')],
        [
          'Settlement',
          (c) =>
            c.settlement ??
            (c.disposition === 'quarantined' ? h('a', { href: '#/quarantine' }, 'unsettled') : '—'),
        ],
        ['Finished', (c) => when(c.finished_at)],
      ],
      r.attempts,
      { 'data-table': 'codes' },
    ),
    h('h3', 'Webhook deliveries'),
    webhookSection(r.webhooks),
  );
}

/** A job's webhook events, each with its delivery attempts. */
function webhookSection(webhooks) {
  return webhooks.length === 0
    ? h('p.muted', 'No webhook events (sync requests and customers without a webhook have none).')
    : webhooks.map((e) =>
        h(
          'section.webhook',
          h(
            'p',
            h('code', e.event_id),
            ` ${e.event} · ${e.state} · ${e.attempts} attempts`,
            e.next_attempt_at ? ` · next ${when(e.next_attempt_at)}` : '',
          ),
          table(
            [
              ['Attempt', (d) => d.attempt],
              ['URL', (d) => d.url],
              ['Started', (d) => when(d.started_at)],
              ['Status', (d) => d.status ?? '—'],
              ['Error', (d) => d.error ?? ''],
              ['ms', (d) => d.duration_ms],
            ],
            e.deliveries,
          ),
        ),
      );
}
