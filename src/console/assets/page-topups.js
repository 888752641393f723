// Top-ups (docs/reference/bot.md#top-ups): the wallet top-up requests owners make in the chat bot, pending ones
// first of all, across customers (#/topups?state=&customer_id=). Approve credits the wallet once
// (the API makes a second send a no-op); reject asks for a reason the person is told. Both ask
// first (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments), and a viewer sees neither (the API refuses them anyway). Payments that
// credited nothing (state `unmatched`: a wrong amount, someone else's invoice, a voided request)
// are listed too, with the Telegram charge id the operator refunds; they have no buttons.
import { api, qs } from './api.js';
import { h, put, statusLine, table, usd, when } from './dom.js';

const STATES = ['pending', 'paid', 'approved', 'rejected', 'expired', 'unmatched'];

/** Why a payment credited nothing, in words (the API's reason codes). */
const UNMATCHED_WHY = {
  unknown_request: 'names no known request',
  not_owner: 'payer is not an owner of the customer',
  not_pending: 'request no longer pending',
  amount_mismatch: 'amount or currency differs',
};

/** What a row adds: an unmatched payment's charge id, amount and why; a request's reason. */
const noteCell = (q) =>
  q.state === 'unmatched'
    ? h(
        'span',
        { 'data-charge': q.telegram_payment_charge_id },
        `charge ${q.telegram_payment_charge_id}: ${q.total_amount} ${q.currency} (smallest unit), ${UNMATCHED_WHY[q.reason] ?? q.reason}; refund it`,
      )
    : (q.reason ?? '');

/** Names for the customers of the requests: their name, and @username per Telegram id. */
async function namesOf(requests) {
  // An unmatched payment may name no customer at all (customer_id null).
  const ids = [...new Set(requests.map((r) => r.customer_id).filter((id) => id !== null))];
  const customers = new Map();
  const people = new Map();
  await Promise.all(
    ids.map(async (id) => {
      // A name that cannot be read leaves the id alone: the list still works without it.
      const [c, u] = await Promise.all([
        api('GET', `/admin/v1/customers/${id}`).catch(() => null),
        api('GET', `/admin/v1/customers/${id}/bot-users`).catch(() => null),
      ]);
      if (c) customers.set(id, c.customer.name);
      for (const user of u?.users ?? []) if (user.username) people.set(user.telegram_user_id, user.username);
    }),
  );
  return { customers, people };
}

/** What the operator decides on one request: approve (confirmed by `h`) or reject (a prompt). */
async function decide(req, verb, status, reload) {
  let body;
  if (verb === 'reject') {
    // The prompt is the confirmation: cancelling it sends nothing.
    const reason = window.prompt(
      `Reject ${req.id} (${usd(req.usd)} to the ${req.mode} wallet of customer ${req.customer_id})? The person who asked is told this reason:`,
      '',
    );
    if (reason === null) return;
    if (!reason.trim()) return status.error({ message: 'A rejection needs a reason: nothing was sent.' });
    body = { reason: reason.trim() };
  }
  let a;
  try {
    a = await api('POST', `/admin/v1/topup-requests/${encodeURIComponent(req.id)}/${verb}`, body);
  } catch (err) {
    return status.error(err);
  }
  // The list is read again before the line says it is done, so what it says is what is shown.
  await reload().catch(() => {});
  status.ok(
    verb === 'approve'
      ? `Approved ${req.id}: ${usd(req.usd)} credited to customer ${req.customer_id} (${req.mode}); the balance is ${usd(a.balance_usd)}.`
      : `Rejected ${req.id}; the person who asked is told.`,
  );
}

const customerCell = (names) => (q) =>
  q.customer_id === null
    ? '—'
    : h(
        'a',
        { href: `#/customers/${q.customer_id}` },
        names.customers.has(q.customer_id)
          ? `${names.customers.get(q.customer_id)} #${q.customer_id}`
          : `#${q.customer_id}`,
      );

const askerCell = (names) => (q) =>
  names.people.has(q.telegram_user_id)
    ? `@${names.people.get(q.telegram_user_id)} (${q.telegram_user_id})`
    : `Telegram user ${q.telegram_user_id}`;

/** Approve and Reject for a pending request (an unmatched payment is refunded, never decided). */
const decideCell = (act) => (q) =>
  q.state !== 'pending'
    ? ''
    : [
        h(
          'button',
          {
            type: 'button',
            'data-approve': q.id,
            write: true,
            confirm: `Approve ${q.id}: credit ${usd(q.usd)} to the ${q.mode} wallet of customer ${q.customer_id}?`,
            onclick: () => act(q, 'approve'),
          },
          'Approve',
        ),
        ' ',
        h(
          'button',
          { type: 'button', 'data-reject': q.id, write: true, onclick: () => act(q, 'reject') },
          'Reject',
        ),
      ];

function columns(names, act) {
  const cols = [
    ['Request', (q) => h('code', q.id)],
    ['Customer', customerCell(names)],
    ['Mode', (q) => q.mode],
    ['Amount', (q) => usd(q.usd)],
    ['State', (q) => h('span', { class: `badge ${q.state}`, 'data-state': q.state }, q.state)],
    ['Asked by', askerCell(names)],
    ['Asked', (q) => when(q.created_at)],
    [
      'Decided',
      (q) => (q.decided_at ? `${when(q.decided_at)}${q.decided_by ? ` by ${q.decided_by}` : ''}` : '—'),
    ],
    ['Note', noteCell],
  ];
  // A viewer gets no column of buttons at all (and the API would refuse them).
  if (document.body.dataset.role !== 'viewer') cols.push(['', decideCell(act)]);
  return cols;
}

export async function render(main) {
  const params = new URLSearchParams(location.hash.split('?')[1] ?? '');
  const state = params.get('state') ?? 'pending';
  const customerId = params.get('customer_id') ?? '';
  const status = statusLine();
  const list = h('div');

  const go = (next) => {
    location.hash = `#/topups${qs({ state: next.state, customer_id: next.customer_id })}`;
  };
  const stateSelect = h(
    'select',
    {
      'aria-label': 'request state',
      name: 'state',
      onchange: (e) => go({ state: e.target.value, customer_id: customerId }),
    },
    [...STATES, 'any'].map((s) =>
      h('option', { value: s, selected: s === state }, s === 'any' ? 'any state' : s),
    ),
  );

  const load = async () => {
    const r = await api(
      'GET',
      `/admin/v1/topup-requests${qs({ state: state === 'any' ? '' : state, customer_id: customerId })}`,
    );
    const names = await namesOf(r.requests);
    const act = (q, verb) => decide(q, verb, status, load);
    put(list, table(columns(names, act), r.requests, { 'data-table': 'topups' }));
  };

  put(
    main,
    h('header.page', h('h2', 'Top-ups')),
    h(
      'p.muted',
      'Wallet top-ups asked for in the chat bot (/topup in live mode). Approving credits the wallet once; the person is told either way. Unmatched: Telegram payments that credited nothing, to refund by their charge id.',
    ),
    h(
      'form.filters',
      { onsubmit: (e) => e.preventDefault() },
      stateSelect,
      customerId
        ? [
            h('span', `customer #${customerId}`),
            h('button', { type: 'button', onclick: () => go({ state, customer_id: '' }) }, 'All customers'),
          ]
        : null,
      h('button', { type: 'button', onclick: () => load().catch(status.error) }, 'Refresh'),
    ),
    status.el,
    list,
  );
  await load();
}
