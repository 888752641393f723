// A customer's wallets (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments): balances, a top-up and a correcting adjustment (each asks
// for confirmation and carries an Idempotency-Key made once per form, so a retried or doubled
// send credits once), and the ledger a page at a time with who made each entry. Both views open
// on the mode that has money or entries.
import { api, qs } from './api.js';
import { csvButton, formValues, h, pagedTable, statusLine, table, usd, usdProblem, when } from './dom.js';

/** The mode to show first: live, unless only test has a balance. */
export function modeWithData(c) {
  const live = c.wallets.live;
  const test = c.wallets.test;
  return live.balance_usd === 0 && live.held_usd === 0 && (test.balance_usd !== 0 || test.held_usd !== 0)
    ? 'test'
    : 'live';
}

const modeSelect = (label, selected, attrs = {}) =>
  h(
    'select',
    { name: 'mode', 'aria-label': label, ...attrs },
    ['live', 'test'].map((m) => h('option', { value: m, selected: m === selected }, m)),
  );

/** A form that sends one wallet write under a key kept until it succeeds (a retry replays). */
function moneyForm(kind, base, reload, status, mode, customerId, fields) {
  let key = crypto.randomUUID();
  const form = h(
    'form.inline',
    {
      'data-form': kind,
      write: true,
      confirm: () => {
        const v = formValues(form);
        // A refused amount is said here, before any confirmation ("Top up by $-3?" never shows).
        const problem = usdProblem(v.usd, kind === 'topup' ? 'positive' : 'nonzero');
        if (problem) {
          status.error({ message: problem });
          return false;
        }
        const what = kind === 'topup' ? 'Top up' : 'Adjust';
        return `${what} the ${v.mode} wallet of customer ${customerId} by ${usd(v.usd.trim())}?`;
      },
      onsubmit: async (e) => {
        e.preventDefault();
        const v = formValues(form);
        const body =
          kind === 'topup'
            ? { mode: v.mode, usd: v.usd.trim(), note: v.note }
            : { mode: v.mode, usd: v.usd.trim(), reason: v.reason };
        try {
          const r = await api('POST', `${base}/wallet/${kind}`, body, { 'Idempotency-Key': key });
          key = crypto.randomUUID();
          const did = kind === 'topup' ? 'Topped up' : 'Adjusted by';
          await reload(`${did} ${usd(v.usd.trim())}: the ${r.mode} balance is ${usd(r.balance_usd)}.`);
        } catch (err) {
          // A refused body may be corrected and sent again under a new key.
          if (err.status === 400 || err.status === 402 || err.status === 422) key = crypto.randomUUID();
          status.error(err);
        }
      },
    },
    modeSelect(`${kind} mode`, mode),
    fields,
  );
  return form;
}

export function walletSection(c, base, reload, customerId) {
  const status = statusLine();
  const mode = modeWithData(c);
  const topup = moneyForm('topup', base, reload, status, mode, customerId, [
    h('input', {
      name: 'usd',
      placeholder: 'USD',
      inputmode: 'decimal',
      required: true,
      'aria-label': 'top-up amount in USD',
    }),
    h('input', { name: 'note', placeholder: 'note', 'aria-label': 'top-up note' }),
    h('button', { type: 'submit' }, 'Top up'),
  ]);
  // A disabled customer cannot redeem: money put in now could not be spent (console.css hides it).
  topup.setAttribute('data-needs-enabled', '');
  const adjust = moneyForm('adjust', base, reload, status, mode, customerId, [
    h('input', {
      name: 'usd',
      placeholder: 'USD, e.g. -5',
      inputmode: 'decimal',
      required: true,
      'aria-label': 'adjustment in USD',
    }),
    h('input', { name: 'reason', placeholder: 'reason', required: true, 'aria-label': 'adjustment reason' }),
    h('button', { type: 'submit' }, 'Adjust'),
  ]);
  return h(
    'section',
    h('h3', 'Wallets'),
    table(
      [
        ['Mode', ([m]) => m],
        ['Balance', ([m, w]) => h('span', { 'data-balance': m }, usd(w.balance_usd))],
        ['Held', ([, w]) => usd(w.held_usd)],
        ['Spendable', ([, w]) => usd(w.spendable_usd)],
      ],
      Object.entries(c.wallets),
      { 'data-table': 'wallets' },
    ),
    topup,
    adjust,
    status.el,
  );
}

export function ledgerSection(c, base) {
  const status = statusLine();
  let mode = modeWithData(c);
  const { tbody, more, reset } = pagedTable({
    fetchPage: (cursor) => api('GET', `${base}/ledger${qs({ mode, cursor, limit: 20 })}`),
    rowsOf: (page) => page.entries,
    row: (e) =>
      h(
        'tr',
        h('td', when(e.at ?? e.created_at)),
        h('td', e.kind),
        h('td.num', usd(e.amount_usd)),
        h('td.num', usd(e.balance_after_usd)),
        h('td', { 'data-cell': 'actor' }, e.actor),
        h('td', e.note),
        h('td', e.reference ?? ''),
      ),
    empty: 'no entries',
    colspan: 7,
    status,
    label: 'Older entries',
  });
  const select = modeSelect('ledger mode', mode, {
    onchange: (e) => {
      mode = e.target.value;
      reset().catch(status.error);
    },
  });
  reset().catch(status.error);
  return h(
    'section',
    h(
      'h3',
      'Wallet ledger ',
      select,
      ' ',
      csvButton('ledger', () => `${base}/ledger${qs({ mode, format: 'csv' })}`, 'ledger.csv', status),
    ),
    status.el,
    h(
      'table',
      { 'data-table': 'ledger' },
      h(
        'thead',
        h(
          'tr',
          ['When', 'Kind', 'Amount', 'Balance after', 'By', 'Note', 'Reference'].map((t) => h('th', t)),
        ),
      ),
      tbody,
    ),
    more,
  );
}
