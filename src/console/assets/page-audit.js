// The audit log (docs/reference/operators-and-audit.md#audit-log): every change, newest first, filtered by customer, operator and
// action, with links to the customer, key or job it touched; a page at a time.
import { api, qs } from './api.js';
import { csvButton, formValues, h, pagedTable, put, statusLine, when } from './dom.js';
import { AUDIT_ACTIONS as ACTIONS } from './vocabulary.js';

/** The target as a link where the console has a page for it. */
function targetCell(e) {
  if (!e.target) return '—';
  if (e.target.startsWith('job_')) return h('a', { href: `#/jobs/${e.target}` }, e.target);
  if (e.target.startsWith('key_') && e.customer_id !== null)
    return h('a', { href: `#/customers/${e.customer_id}` }, e.target);
  if (e.target.startsWith('op_')) return h('a', { href: '#/operators' }, e.target);
  return e.target;
}

export async function render(main) {
  const params = new URLSearchParams(location.hash.split('?')[1] ?? '');
  const filter = {
    customer_id: params.get('customer_id') ?? '',
    actor: params.get('actor') ?? '',
    action: params.get('action') ?? '',
  };
  const status = statusLine();
  const { tbody, more, load } = pagedTable({
    fetchPage: (cursor) => api('GET', `/admin/v1/audit${qs({ ...filter, cursor, limit: 50 })}`),
    rowsOf: (page) => page.events,
    row: (e) =>
      h(
        'tr',
        { 'data-action': e.action },
        h('td', when(e.at)),
        h('td', { 'data-cell': 'actor' }, e.actor),
        h('td', e.action),
        h(
          'td',
          e.customer_id === null ? '—' : h('a', { href: `#/customers/${e.customer_id}` }, e.customer_id),
        ),
        h('td', targetCell(e)),
        h('td', h('code', JSON.stringify(e.details))),
        h('td.muted', e.request_id, ' from ', e.ip),
      ),
    empty: 'no events',
    colspan: 7,
    status,
    label: 'Older events',
  });
  const form = h(
    'form.inline',
    {
      'data-form': 'audit-filter',
      onsubmit: (e) => {
        e.preventDefault();
        location.hash = `#/audit${qs(formValues(form))}`;
      },
    },
    h('input', {
      name: 'customer_id',
      value: filter.customer_id,
      placeholder: 'customer id',
      inputmode: 'numeric',
      'aria-label': 'customer id',
    }),
    h('input', { name: 'actor', value: filter.actor, placeholder: 'operator', 'aria-label': 'operator' }),
    h(
      'select',
      { name: 'action', 'aria-label': 'action' },
      h('option', { value: '' }, 'any action'),
      ACTIONS.map((a) => h('option', { value: a, selected: a === filter.action }, a)),
    ),
    h('button', { type: 'submit' }, 'Filter'),
  );
  put(
    main,
    h(
      'header.page',
      h('h2', 'Audit log'),
      csvButton('audit', () => `/admin/v1/audit${qs({ ...filter, format: 'csv' })}`, 'audit.csv', status),
    ),
    form,
    status.el,
    h(
      'table',
      { 'data-table': 'audit' },
      h(
        'thead',
        h(
          'tr',
          ['When', 'Operator', 'Action', 'Customer', 'Target', 'Details', 'Request'].map((t) => h('th', t)),
        ),
      ),
      tbody,
    ),
    more,
  );
  await load();
}
